package operator

import (
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flinkgo/flinkgo/runtime/connector"
	"github.com/flinkgo/flinkgo/runtime/plan"
)

// Kind is how the runtime builds the operators of one plan.Kind: the row of
// the registry an operator adds.
type Kind struct {
	Kind plan.Kind
	// Schema computes an operator's output schema from its inputs'
	// schemas (in plan order; none for a source).
	Schema func(op *plan.Operator, in []*arrow.Schema) (*arrow.Schema, error)
	// New builds one subtask of the operator. Exactly one of New and
	// OpenSource is set.
	New func(ctx *Context) (Operator, error)
	// OpenSource opens one subtask of a source: its task reads it.
	OpenSource func(ctx *Context) (connector.Reader, error)
	// State says what a snapshot holds of the operator.
	State StateDescriptor
}

// StateDescriptor says what state an operator keeps in a snapshot, so the
// runtime can prepare it (keyed state: the subtask's key groups) and
// explain it.
type StateDescriptor struct {
	// Keyed: keyed state, by key group (rescalable); the subtask gets a
	// KeyedContext.
	Keyed bool
	// What describes the state, for explanations ("" for none).
	What string
}

// Registry maps operator kinds to how they are built. It is a value: build
// one with NewRegistry (package operators has the runtime's), pass it
// where it is needed; nothing registers itself.
type Registry struct {
	kinds map[plan.Kind]Kind
}

// NewRegistry returns a registry of kinds; a kind given twice, or without
// a Schema or a constructor, is an error.
func NewRegistry(kinds ...Kind) (*Registry, error) {
	r := &Registry{kinds: make(map[plan.Kind]Kind, len(kinds))}
	for _, k := range kinds {
		if _, dup := r.kinds[k.Kind]; dup {
			return nil, fmt.Errorf("operator: kind %s registered twice", k.Kind)
		}
		if k.Schema == nil || (k.New == nil) == (k.OpenSource == nil) {
			return nil, fmt.Errorf("operator: kind %s needs a Schema and exactly one of New and OpenSource", k.Kind)
		}
		r.kinds[k.Kind] = k
	}
	return r, nil
}

// Lookup returns how to build operators of kind k.
func (r *Registry) Lookup(k plan.Kind) (Kind, error) {
	kind, ok := r.kinds[k]
	if !ok {
		return Kind{}, fmt.Errorf("no operator of kind %s in this runtime", k)
	}
	return kind, nil
}

// Schema derives op's output schema from its inputs' (plan.SchemaDeriver:
// planning with the registry in plan.Options.Schemas shows the schemas in
// Explain).
func (r *Registry) Schema(op *plan.Operator, in []*arrow.Schema) (*arrow.Schema, error) {
	kind, err := r.Lookup(op.Kind)
	if err != nil {
		return nil, err
	}
	return kind.Schema(op, in)
}

// Schemas computes every operator's output schema, in topological order.
func (r *Registry) Schemas(g *plan.Graph) ([]*arrow.Schema, error) {
	out := make([]*arrow.Schema, len(g.Operators))
	for _, op := range g.Operators {
		var in []*arrow.Schema
		for _, e := range g.Inputs(op.ID) {
			in = append(in, g.EdgeSchema(e, out))
		}
		var err error
		if out[op.ID], err = r.Schema(op, in); err != nil {
			return nil, fmt.Errorf("operator %q (uid %s): %w", op.Name, op.UID, err)
		}
	}
	return out, nil
}

// With returns a copy of r in which kinds replace the rows of their
// plan.Kind (or add them): a program that embeds the runtime gives it its
// own source, say. r is unchanged.
func (r *Registry) With(kinds ...Kind) (*Registry, error) {
	all := make([]Kind, 0, len(r.kinds)+len(kinds))
	for k, row := range r.kinds {
		if !slices.ContainsFunc(kinds, func(n Kind) bool { return n.Kind == k }) {
			all = append(all, row)
		}
	}
	return NewRegistry(append(all, kinds...)...)
}
