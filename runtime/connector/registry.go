package connector

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
)

// Registry maps connector kinds to connectors. It is a value: build one
// with NewRegistry (connectors/builtin has the runtime's), pass it where it
// is needed; nothing registers itself.
type Registry struct {
	sources map[string]SourceConnector
	sinks   map[string]SinkConnector
}

// NewRegistry returns a registry of the given connectors; a kind given
// twice (among sources, or among sinks), empty, or without Decode is an
// error.
func NewRegistry(sources []SourceConnector, sinks []SinkConnector) (*Registry, error) {
	r := &Registry{sources: map[string]SourceConnector{}, sinks: map[string]SinkConnector{}}
	for _, s := range sources {
		if s.Kind == "" || s.Decode == nil {
			return nil, fmt.Errorf("connector: source connector %q needs a kind and a Decode", s.Kind)
		}
		if _, dup := r.sources[s.Kind]; dup {
			return nil, fmt.Errorf("connector: source connector %q registered twice", s.Kind)
		}
		r.sources[s.Kind] = s
	}
	for _, s := range sinks {
		if s.Kind == "" || s.Decode == nil {
			return nil, fmt.Errorf("connector: sink connector %q needs a kind and a Decode", s.Kind)
		}
		if _, dup := r.sinks[s.Kind]; dup {
			return nil, fmt.Errorf("connector: sink connector %q registered twice", s.Kind)
		}
		r.sinks[s.Kind] = s
	}
	return r, nil
}

// With returns a copy of r in which the given connectors replace those of
// their kinds (or are added). r is unchanged.
func (r *Registry) With(sources []SourceConnector, sinks []SinkConnector) (*Registry, error) {
	var allSources []SourceConnector
	for k, s := range r.sources {
		if !slices.ContainsFunc(sources, func(n SourceConnector) bool { return n.Kind == k }) {
			allSources = append(allSources, s)
		}
	}
	var allSinks []SinkConnector
	for k, s := range r.sinks {
		if !slices.ContainsFunc(sinks, func(n SinkConnector) bool { return n.Kind == k }) {
			allSinks = append(allSinks, s)
		}
	}
	return NewRegistry(append(allSources, sources...), append(allSinks, sinks...))
}

// SourceKind is the connector kind a wire source names: its kind field's
// name, or ConnectorSource.kind.
func SourceKind(wire *planpb.Source) string {
	if c := wire.GetConnector(); c != nil {
		return c.GetKind()
	}
	f := wire.ProtoReflect().WhichOneof(wire.ProtoReflect().Descriptor().Oneofs().ByName("kind"))
	if f == nil {
		return ""
	}
	return string(f.Name())
}

// SinkKind is the connector kind a wire sink names, as SourceKind.
func SinkKind(wire *planpb.Sink) string {
	if c := wire.GetConnector(); c != nil {
		return c.GetKind()
	}
	f := wire.ProtoReflect().WhichOneof(wire.ProtoReflect().Descriptor().Oneofs().ByName("kind"))
	if f == nil {
		return ""
	}
	return string(f.Name())
}

// Source decodes a source node's wire config with the connector of its
// kind.
func (r *Registry) Source(wire *planpb.Source) (Source, error) {
	kind := SourceKind(wire)
	if kind == "" {
		return nil, fmt.Errorf("the source names no connector")
	}
	c, ok := r.sources[kind]
	if !ok {
		return nil, fmt.Errorf("no source connector %q in this runtime (it has %s)", kind, known(r.sources))
	}
	return c.Decode(wire)
}

// Sink decodes a sink node's wire config with the connector of its kind.
func (r *Registry) Sink(wire *planpb.Sink) (Sink, error) {
	kind := SinkKind(wire)
	if kind == "" {
		return nil, fmt.Errorf("the sink names no connector")
	}
	c, ok := r.sinks[kind]
	if !ok {
		return nil, fmt.Errorf("no sink connector %q in this runtime (it has %s)", kind, known(r.sinks))
	}
	return c.Decode(wire)
}

func known[V any](m map[string]V) string { return strings.Join(sortedKinds(m), ", ") }

// SourceKinds are the kinds of r's source connectors, sorted.
func (r *Registry) SourceKinds() []string { return sortedKinds(r.sources) }

// SinkKinds are the kinds of r's sink connectors, sorted.
func (r *Registry) SinkKinds() []string { return sortedKinds(r.sinks) }

func sortedKinds[V any](m map[string]V) []string {
	kinds := make([]string, 0, len(m))
	for k := range m {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	return kinds
}
