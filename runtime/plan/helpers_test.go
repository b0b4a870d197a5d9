package plan

import (
	"errors"
	"strings"
	"testing"

	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
	"github.com/flinkgo/flinkgo/udf/bridge/proto/workerpb"
)

// Expressions.

func col(name string) *planpb.Expr { return &planpb.Expr{Kind: &planpb.Expr_Column{Column: name}} }

func lit(v int64) *planpb.Expr {
	return &planpb.Expr{Kind: &planpb.Expr_Literal{Literal: &planpb.Literal{Value: &planpb.Literal_IntValue{IntValue: v}}}}
}

func fn(name string, args ...*planpb.Expr) *planpb.Expr {
	return &planpb.Expr{Kind: &planpb.Expr_Call{Call: &planpb.Call{Function: name, Args: args}}}
}

// spec declares a UDF as the client would, without a payload: the planner
// must not need it.
func spec(name string, concurrency, batchSize int32, async bool) *workerpb.UdfSpec {
	return &workerpb.UdfSpec{Name: name, Concurrency: concurrency, BatchSize: batchSize, IsAsync: async}
}

func call(s *workerpb.UdfSpec, args ...*planpb.Expr) *planpb.Expr {
	return &planpb.Expr{Kind: &planpb.Expr_Udf{Udf: &planpb.UdfExpr{Udf: s, Args: args}}}
}

func as(name string, e *planpb.Expr) *planpb.NamedExpr { return &planpb.NamedExpr{Name: name, Expr: e} }

// Inputs.

func from(id int32) *planpb.Input { return &planpb.Input{Node: id} }

func fromP(id int32, kind Partitioning, keys ...string) *planpb.Input {
	return &planpb.Input{Node: id, Partitioning: &planpb.Partitioning{Kind: planpb.Partitioning_Kind(kind), Keys: keys}}
}

// Nodes. Options come after the kind-specific arguments.

type nodeOpt func(*planpb.Node)

func uid(u string) nodeOpt { return func(n *planpb.Node) { n.Uid = u } }
func par(p int32) nodeOpt  { return func(n *planpb.Node) { n.Parallelism = p } }

func node(id int32, name string, inputs []*planpb.Input, opts []nodeOpt) *planpb.Node {
	n := &planpb.Node{Id: id, Name: name, Inputs: inputs}
	for _, o := range opts {
		o(n)
	}
	return n
}

func source(id int32, name string, opts ...nodeOpt) *planpb.Node {
	n := node(id, name, nil, opts)
	n.Kind = &planpb.Node_Source{Source: &planpb.Source{Kind: &planpb.Source_Datagen{Datagen: &planpb.DatagenSource{Rows: 10}}}}
	return n
}

func selectNode(id int32, name string, in *planpb.Input, cols []*planpb.NamedExpr, opts ...nodeOpt) *planpb.Node {
	n := node(id, name, []*planpb.Input{in}, opts)
	n.Kind = &planpb.Node_Select{Select: &planpb.Select{Columns: cols}}
	return n
}

func filterNode(id int32, name string, in *planpb.Input, pred *planpb.Expr, opts ...nodeOpt) *planpb.Node {
	n := node(id, name, []*planpb.Input{in}, opts)
	n.Kind = &planpb.Node_Filter{Filter: &planpb.Filter{Predicate: pred}}
	return n
}

func mapBatches(id int32, name string, in *planpb.Input, f *workerpb.UdfSpec, opts ...nodeOpt) *planpb.Node {
	n := node(id, name, []*planpb.Input{in}, opts)
	n.Kind = &planpb.Node_MapBatches{MapBatches: &planpb.MapBatches{Function: f}}
	return n
}

func keyedAgg(id int32, name string, in *planpb.Input, keys []string, opts ...nodeOpt) *planpb.Node {
	n := node(id, name, []*planpb.Input{in}, opts)
	n.Kind = &planpb.Node_KeyedAggregate{KeyedAggregate: &planpb.KeyedAggregate{
		Keys: keys, Aggregates: []*planpb.Aggregate{{Function: "count", Name: "n"}},
	}}
	return n
}

func union(id int32, name string, ins []*planpb.Input, opts ...nodeOpt) *planpb.Node {
	n := node(id, name, ins, opts)
	n.Kind = &planpb.Node_Union{Union: &planpb.Union{}}
	return n
}

func sink(id int32, name string, in *planpb.Input, opts ...nodeOpt) *planpb.Node {
	n := node(id, name, []*planpb.Input{in}, opts)
	n.Kind = &planpb.Node_Sink{Sink: &planpb.Sink{Kind: &planpb.Sink_Collect{Collect: &planpb.CollectSink{}}}}
	return n
}

func job(nodes ...*planpb.Node) *planpb.JobPlan {
	return &planpb.JobPlan{Name: "test", Nodes: nodes}
}

func jobWith(config map[string]string, nodes ...*planpb.Node) *planpb.JobPlan {
	j := job(nodes...)
	j.Config = config
	return j
}

// Graph inspection.

func mustPlan(t *testing.T, j *planpb.JobPlan, opts Options) *Graph {
	t.Helper()
	g, err := PlanWire(j, opts)
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	return g
}

// planError plans j, expects it to fail, and returns the message.
func planError(t *testing.T, j *planpb.JobPlan, opts Options) string {
	t.Helper()
	g, err := PlanWire(j, opts)
	if err == nil {
		t.Fatalf("Plan succeeded, want an error; graph:\n%s", g.Explain())
	}
	if !errors.Is(err, ErrInvalidPlan) {
		t.Fatalf("Plan error %v does not wrap ErrInvalidPlan", err)
	}
	return err.Error()
}

func op(t *testing.T, g *Graph, uid string) *Operator {
	t.Helper()
	for _, o := range g.Operators {
		if o.UID == uid {
			return o
		}
	}
	t.Fatalf("no operator with uid %q; graph:\n%s", uid, g.Explain())
	return nil
}

func edge(t *testing.T, g *Graph, fromUID, toUID string) *Edge {
	t.Helper()
	f, to := op(t, g, fromUID), op(t, g, toUID)
	for _, e := range g.Edges {
		if e.From == f.ID && e.To == to.ID {
			return e
		}
	}
	t.Fatalf("no edge %s -> %s; graph:\n%s", fromUID, toUID, g.Explain())
	return nil
}

func uids(g *Graph) []string {
	out := make([]string, len(g.Operators))
	for i, o := range g.Operators {
		out[i] = o.UID
	}
	return out
}

// udfNames lists the UDF calls of a UDF operator as "name(args)->output".
func udfCalls(o *Operator) string {
	var parts []string
	for _, c := range o.UDF.Calls {
		parts = append(parts, c.GetUdf().GetName()+"("+strings.Join(c.GetArgs(), ",")+")->"+c.GetOutput())
	}
	return strings.Join(parts, " ")
}

func wantContains(t *testing.T, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("%q\ndoes not contain %q", got, w)
		}
	}
}
