package plan

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
)

// summary describes one operator of a split node compactly; temporary
// columns are shown as $0, $1, ...
func summary(o *Operator) string {
	role := o.Role
	if role == "" {
		role = o.Kind.String()
	}
	s := fmt.Sprintf("%s p=%d", role, o.Parallelism)
	if o.KeepInput {
		s += " keep"
		if len(o.DropColumns) > 0 {
			s += " -" + strings.Join(o.DropColumns, ",")
		}
	}
	switch {
	case o.Kind == KindUDF:
		s += fmt.Sprintf(": %s | in %s | out %s", udfCalls(o), strings.Join(o.UDF.InputColumns, ","), strings.Join(o.UDF.OutputColumns, ","))
	case o.Kind == KindSelect && len(o.Node.Select.Columns) > 0:
		var cols []string
		for _, c := range o.Node.Select.Columns {
			if ColumnName(c.Expr) == c.Name {
				cols = append(cols, c.Name)
			} else {
				cols = append(cols, c.Name+"="+formatExpr(c.Expr))
			}
		}
		s += ": " + strings.Join(cols, ", ")
	case o.Kind == KindFilter:
		s += ": where " + formatExpr(o.Node.Filter.Predicate)
	}
	return strings.ReplaceAll(s, reservedPrefix+"tmp_", "$")
}

// nodeOps plans src -> n -> sink and returns the operators of node 2.
func nodeOps(t *testing.T, n *planpb.Node, config map[string]string) (*Graph, []*Operator) {
	t.Helper()
	g := mustPlan(t, jobWith(config, source(1, "src"), n, sink(3, "out", from(2))), Options{})
	var ops []*Operator
	for _, o := range g.Operators {
		if o.NodeID == 2 {
			ops = append(ops, o)
		}
	}
	return g, ops
}

func summaries(ops []*Operator) []string {
	out := make([]string, len(ops))
	for i, o := range ops {
		out[i] = summary(o)
	}
	return out
}

func TestSelectWithUDFs(t *testing.T) {
	f := spec("f", 0, 0, false)
	g := spec("g", 0, 0, false)
	h := spec("h", 0, 0, false)
	f2, g4, f4 := spec("f", 2, 0, false), spec("g", 4, 0, false), spec("f", 4, 0, false)
	for _, tc := range []struct {
		name string
		cols []*planpb.NamedExpr
		opts []nodeOpt
		want []string
	}{
		{"one call on a column: only the udf operator",
			[]*planpb.NamedExpr{as("a", call(f, col("x")))}, nil,
			[]string{"udf-0 p=1: f(x)->a | in x | out a"}},
		{"columns the output needs are carried",
			[]*planpb.NamedExpr{as("x", col("x")), as("a", call(f, col("x")))}, nil,
			[]string{"udf-0 p=1: f(x)->a | in x | out x,a"}},
		{"same concurrency fused",
			[]*planpb.NamedExpr{as("a", call(f4, col("x"))), as("b", call(g4, col("y")))}, nil,
			[]string{"udf-0 p=4: f(x)->a g(y)->b | in x,y | out a,b"}},
		{"no concurrency fuses with an explicit one",
			[]*planpb.NamedExpr{as("a", call(f, col("x"))), as("b", call(g4, col("y")))}, nil,
			[]string{"udf-0 p=4: f(x)->a g(y)->b | in x,y | out a,b"}},
		{"different concurrency split",
			[]*planpb.NamedExpr{as("a", call(f2, col("x"))), as("b", call(g4, col("y"))), as("c", call(h, col("z")))}, nil,
			[]string{
				"udf-0 p=2: f(x)->a h(z)->c | in x,z | out y,a,c",
				"udf-1 p=4: g(y)->b | in y | out a,b,c",
			}},
		{"async keeps the node's parallelism",
			[]*planpb.NamedExpr{as("a", call(spec("f", 8, 0, true), col("x")))}, []nodeOpt{par(3)},
			[]string{"udf-0 p=3: f(x)->a | in x | out a"}},
		{"async fuses with a synchronous concurrency",
			[]*planpb.NamedExpr{as("a", call(spec("f", 8, 0, true), col("x"))), as("b", call(spec("g", 3, 0, false), col("x")))}, nil,
			[]string{"udf-0 p=3: f(x)->a g(x)->b | in x | out a,b"}},
		{"nested calls fuse",
			[]*planpb.NamedExpr{as("s", call(g, call(f, col("x")), col("y")))}, nil,
			[]string{"udf-0 p=1: f(x)->$0 g($0,y)->s | in x,y | out s"}},
		{"nested calls of different concurrency",
			[]*planpb.NamedExpr{as("s", call(g4, call(f2, col("x"))))}, nil,
			[]string{
				"udf-0 p=2: f(x)->$0 | in x | out $0",
				"udf-1 p=4: g($0)->s | in $0 | out s",
			}},
		{"pre-projection for a computed argument",
			[]*planpb.NamedExpr{as("x", col("x")), as("s", call(f, fn("add", col("x"), lit(1))))}, nil,
			[]string{
				"pre p=1: x, $0=add(x, 1)",
				"udf-0 p=1: f($0)->s | in $0 | out x,s",
			}},
		{"pre-projection for a literal argument",
			[]*planpb.NamedExpr{as("s", call(f, col("x"), lit(3)))}, nil,
			[]string{
				"pre p=1: x, $0=3",
				"udf-0 p=1: f(x,$0)->s | in x,$0 | out s",
			}},
		{"post-projection for a computed result",
			[]*planpb.NamedExpr{as("s", fn("add", call(f, col("x")), lit(1)))}, nil,
			[]string{
				"udf-0 p=1: f(x)->$0 | in x | out $0",
				"post p=1: s=add($0, 1)",
			}},
		{"post-projection for a rename",
			[]*planpb.NamedExpr{as("y", col("x")), as("s", call(f, col("x")))}, nil,
			[]string{
				"udf-0 p=1: f(x)->s | in x | out x,s",
				"post p=1: y=x, s",
			}},
		{"a new column order needs no post-projection",
			[]*planpb.NamedExpr{as("s", call(f, col("x"))), as("x", col("x"))}, []nodeOpt{par(2)},
			[]string{"udf-0 p=2: f(x)->s | in x | out s,x"}},
		{"an output replacing a column it reads",
			[]*planpb.NamedExpr{as("x", call(f, col("x")))}, nil,
			[]string{
				"udf-0 p=1: f(x)->$0 | in x | out $0",
				"post p=1: x=$0",
			}},
		{"an argument computed from another call",
			[]*planpb.NamedExpr{as("k", col("k")), as("s", call(f, fn("add", call(g, col("x")), lit(1)))), as("t", call(h, col("y")))}, []nodeOpt{par(2)},
			[]string{
				"udf-0 p=2: g(x)->$0 h(y)->t | in x,y | out k,$0,t",
				"pre-1 p=2: k, $1=add($0, 1), t",
				"udf-1 p=2: f($1)->s | in $1 | out k,s,t",
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gr, ops := nodeOps(t, selectNode(2, "sel", from(1), tc.cols, tc.opts...), nil)
			if got := summaries(ops); !slices.Equal(got, tc.want) {
				t.Fatalf("operators\n%s\nwant\n%s\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"), gr.Explain())
			}
			for i := 1; i < len(ops); i++ {
				e := gr.Inputs(ops[i].ID)
				if len(e) != 1 || e[0].From != ops[i-1].ID || e[0].Explicit {
					t.Fatalf("operator %s is not fed by %s: %+v", ops[i].UID, ops[i-1].UID, e)
				}
			}
			last := ops[len(ops)-1]
			if out := gr.Outputs(last.ID); len(out) != 1 || gr.Operators[out[0].To].Kind != KindSink {
				t.Fatalf("the sink does not read the node's last operator")
			}
		})
	}
}

func TestSelectWithoutUDFsIsOneOperator(t *testing.T) {
	n := selectNode(2, "sel", from(1), []*planpb.NamedExpr{as("y", fn("add", col("x"), lit(1)))})
	_, ops := nodeOps(t, n, nil)
	if len(ops) != 1 || ops[0].Node.ID != int(n.GetId()) || ops[0].Node.UID != n.GetUid() || ops[0].Role != "" || ops[0].UID != "select-2" {
		t.Fatalf("operators %v", summaries(ops))
	}
}

func TestUDFOperator(t *testing.T) {
	cols := []*planpb.NamedExpr{
		as("a", call(spec("f", 0, 500, false), col("x"))),
		as("b", call(spec("g", 0, 200, true), col("x"))),
		as("c", call(spec("h", 0, 0, false), col("x"))),
		as("d", call(spec("k", 2, 0, false), col("x"))),
		as("e", call(spec("m", 2, 0, false), col("x"))),
	}
	_, ops := nodeOps(t, selectNode(2, "sel", from(1), cols), nil)
	if len(ops) != 1 {
		t.Fatalf("operators %v", summaries(ops))
	}
	o := ops[0]
	if o.Name != "f+g+h+k+m" || o.Kind != KindUDF || o.Node != nil {
		t.Fatalf("operator %+v", o)
	}
	if o.BatchSize != 200 || o.UDF.Concurrency != 2 || !o.UDF.Async || o.Parallelism != 2 || o.ParallelismFrom != FromConcurrency {
		t.Fatalf("batch size %d concurrency %d async %v p=%d (%s)", o.BatchSize, o.UDF.Concurrency, o.UDF.Async, o.Parallelism, o.ParallelismFrom)
	}
	if !slices.Equal(o.UDF.ResultColumns, []string{"a", "b", "c", "d", "e"}) {
		t.Fatalf("results %v", o.UDF.ResultColumns)
	}
	if o.UDF.Calls[0].GetUdf() != cols[0].GetExpr().GetUdf().GetUdf() {
		t.Fatal("the call does not carry the client's UdfSpec")
	}

	for _, tc := range []struct {
		name   string
		config map[string]string
		want   int
	}{
		{"global batch size from the plan", map[string]string{ConfigBatchSize: "123"}, 123},
		{"default batch size", nil, DefaultBatchSize},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ops := nodeOps(t, selectNode(2, "sel", from(1), []*planpb.NamedExpr{as("a", call(spec("f", 0, 0, false), col("x")))}), tc.config)
			if ops[0].BatchSize != tc.want {
				t.Fatalf("batch size %d, want %d", ops[0].BatchSize, tc.want)
			}
		})
	}
	t.Run("explicit batch size beats the plan's", func(t *testing.T) {
		_, ops := nodeOps(t, selectNode(2, "sel", from(1), []*planpb.NamedExpr{as("a", call(spec("f", 0, 700, false), col("x")))}), map[string]string{ConfigBatchSize: "123"})
		if ops[0].BatchSize != 700 {
			t.Fatalf("batch size %d, want 700", ops[0].BatchSize)
		}
	})
}

func TestConcurrencyChangesParallelism(t *testing.T) {
	cols := []*planpb.NamedExpr{
		as("x", col("x")),
		as("a", call(spec("f", 2, 0, false), fn("add", col("x"), lit(1)))),
		as("b", fn("multiply", call(spec("g", 4, 0, false), col("x")), lit(2))),
	}
	g, ops := nodeOps(t, selectNode(2, "sel", from(1), cols, par(3), uid("sel")), nil)
	want := []string{
		"pre p=3: x, $0=add(x, 1)",
		"udf-0 p=2: f($0)->a | in $0 | out x,a",
		"udf-1 p=4: g(x)->$1 | in x | out x,a,$1",
		"post p=3: x, a, b=multiply($1, 2)",
	}
	if got := summaries(ops); !slices.Equal(got, want) {
		t.Fatalf("operators\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// src(1) -> pre(3) -> udf-0(2) -> udf-1(4) -> post(3) -> sink(1): every
	// edge changes.
	if len(g.Changes) != 5 {
		t.Fatalf("changes %+v", g.Changes)
	}
	wantContains(t, g.Changes[2].Reason, `forward edge from udf "f" (p=2) to udf "g" (p=4)`)
	for _, c := range g.Changes {
		if c.To != PartitionRebalance {
			t.Fatalf("change %+v", c)
		}
	}
}

func TestFilterWithUDF(t *testing.T) {
	f := spec("f", 0, 0, false)
	for _, tc := range []struct {
		name string
		pred *planpb.Expr
		want []string
	}{
		{"predicate is a call", call(f, col("x")), []string{
			"udf-0 p=1 keep: f(x)->$0 | in x | out $0",
			"filter p=1: where $0",
			"drop p=1 keep -$0",
		}},
		{"call inside a predicate, computed argument", fn("and", fn("greater", call(f, fn("add", col("x"), lit(1))), lit(5)), col("y")), []string{
			"pre p=1 keep: $0=add(x, 1)",
			"udf-0 p=1 keep -$0: f($0)->$1 | in $0 | out $1",
			"filter p=1: where and(greater($1, 5), y)",
			"drop p=1 keep -$1",
		}},
		{"nested calls", fn("or", call(spec("g", 0, 0, false), call(f, col("x"))), call(spec("h", 3, 0, false), col("y"))), []string{
			"udf-0 p=3 keep: f(x)->$0 g($0)->$1 h(y)->$2 | in x,y | out $1,$2",
			"filter p=1: where or($1, $2)",
			"drop p=1 keep -$1,$2",
		}},
		{"argument computed from a call", call(f, fn("not", call(spec("g", 0, 0, false), col("x")))), []string{
			"udf-0 p=1 keep: g(x)->$0 | in x | out $0",
			"pre-1 p=1 keep -$0: $1=not($0)",
			"udf-1 p=1 keep -$1: f($1)->$2 | in $1 | out $2",
			"filter p=1: where $2",
			"drop p=1 keep -$2",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, ops := nodeOps(t, filterNode(2, "flt", from(1), tc.pred), nil)
			if got := summaries(ops); !slices.Equal(got, tc.want) {
				t.Fatalf("operators\n%s\nwant\n%s\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"), g.Explain())
			}
			for _, o := range ops {
				if !o.KeepInput && o.Kind != KindFilter {
					t.Fatalf("%s does not keep its input's columns", o.UID)
				}
			}
		})
	}
	t.Run("without UDF", func(t *testing.T) {
		n := filterNode(2, "flt", from(1), fn("greater", col("x"), lit(1)))
		_, ops := nodeOps(t, n, nil)
		if len(ops) != 1 || ops[0].Node.ID != int(n.GetId()) || ops[0].Node.UID != n.GetUid() || ops[0].KeepInput {
			t.Fatalf("operators %v", summaries(ops))
		}
	})
}
