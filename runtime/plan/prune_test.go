package plan

import (
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
)

// The pruning rule, planned without schemas (as the benchmarks do): which
// columns each select and UDF operator keeps. The same plans run with and
// without the rule in python/tests/test_prune.py, whose results must match.

var noPrune = map[string]string{ConfigPruneColumns: "false"}

// selectNames lists a select operator's column names.
func selectNames(o *Operator) []string {
	var names []string
	for _, c := range o.Node.Select.Columns {
		names = append(names, c.Name)
	}
	return names
}

func passThrough(names ...string) []*planpb.NamedExpr {
	out := make([]*planpb.NamedExpr, len(names))
	for i, n := range names {
		out[i] = as(n, col(n))
	}
	return out
}

func sumAgg(id int32, in *planpb.Input, keys []string, column string) *planpb.Node {
	n := keyedAgg(id, "agg", in, keys)
	n.GetKeyedAggregate().Aggregates = []*planpb.Aggregate{{Function: "sum", Column: column, Name: "total"}}
	return n
}

func TestPruneDropsWhatAKeyedAggregationDoesNotRead(t *testing.T) {
	cols := append(passThrough("x", "y"), as("k", fn("multiply", col("x"), lit(100))))
	j := job(source(1, "src", uid("src")), selectNode(2, "sel", from(1), cols, uid("sel")),
		sumAgg(3, from(2), []string{"k"}, "y"), sink(4, "out", from(3)))
	before := proto.Clone(j)
	g := mustPlan(t, j, Options{DefaultParallelism: 2})
	sel := op(t, g, "sel")
	if got := selectNames(sel); !slices.Equal(got, []string{"y", "k"}) {
		t.Errorf("select columns %v, want [y k]", got)
	}
	if !slices.Equal(sel.Pruned, []string{"x"}) {
		t.Errorf("Pruned %v, want [x]", sel.Pruned)
	}
	wantContains(t, g.Explain(), "pruned: x (no operator downstream reads them; pipeline.prune-unread-columns)")
	if !proto.Equal(j, before) {
		t.Error("planning changed the job plan (the user's select node)")
	}

	kept := mustPlan(t, jobWith(noPrune, j.GetNodes()...), Options{DefaultParallelism: 2})
	if got := selectNames(op(t, kept, "sel")); !slices.Equal(got, []string{"x", "y", "k"}) {
		t.Errorf("with %s=false the select has %v, want [x y k]", ConfigPruneColumns, got)
	}
	if strings.Contains(kept.Explain(), "pruned:") {
		t.Errorf("with the rule off, explain shows a pruning:\n%s", kept.Explain())
	}
}

func TestPruneKeepsWhatAFilterOrWatermarkAssignerReadsOnTheWay(t *testing.T) {
	wm := node(4, "wm", []*planpb.Input{from(3)}, []nodeOpt{uid("wm")})
	wm.Kind = &planpb.Node_WatermarkAssigner{WatermarkAssigner: &planpb.WatermarkAssigner{TimeColumn: "ts"}}
	j := job(source(1, "src"),
		selectNode(2, "sel", from(1), passThrough("ts", "k", "v", "f", "extra"), uid("sel")),
		filterNode(3, "filter", from(2), fn("greater", col("f"), lit(0))),
		wm,
		sumAgg(5, from(4), []string{"k"}, "v"), sink(6, "out", from(5)))
	g := mustPlan(t, j, Options{DefaultParallelism: 2})
	if got := selectNames(op(t, g, "sel")); !slices.Equal(got, []string{"ts", "k", "v", "f"}) {
		t.Errorf("select columns %v, want [ts k v f]: the filter reads f, the assigner ts, the aggregation k and v", got)
	}
}

func TestPruneDropsUDFPassThroughColumns(t *testing.T) {
	f := spec("f", 0, 0, false)
	j := job(source(1, "src"),
		selectNode(2, "sel", from(1), append(passThrough("a", "b", "unread"), as("y", call(f, col("a")))), uid("sel")),
		sumAgg(3, from(2), []string{"b"}, "y"), sink(4, "out", from(3)))
	g := mustPlan(t, j, Options{DefaultParallelism: 2})
	var udf *Operator
	for _, o := range g.Operators {
		if o.Kind == KindUDF {
			udf = o
		}
	}
	if udf == nil {
		t.Fatalf("no UDF operator:\n%s", g.Explain())
	}
	if !slices.Equal(udf.UDF.OutputColumns, []string{"b", "y"}) || !slices.Equal(udf.Pruned, []string{"a", "unread"}) {
		t.Errorf("UDF operator emits %v and pruned %v, want [b y] and [a unread] (a is only the UDF's argument):\n%s",
			udf.UDF.OutputColumns, udf.Pruned, g.Explain())
	}
	if !slices.Equal(udf.UDF.InputColumns, []string{"a"}) {
		t.Errorf("the worker reads %v, want [a]", udf.UDF.InputColumns)
	}
}

func TestPruneKeepsEveryColumnForWhatReadsWholeRows(t *testing.T) {
	sel := func(id int32, in int32) *planpb.Node {
		return selectNode(id, "sel", from(in), passThrough("k", "v", "extra"), uid("sel"))
	}
	joinNode := node(4, "join", []*planpb.Input{from(2), from(3)}, nil)
	joinNode.Kind = &planpb.Node_Join{Join: &planpb.Join{LeftKeys: []string{"k"}, RightKeys: []string{"k"}}}
	mb := mapBatches(3, "mb", from(2), spec("m", 0, 0, false))
	updates := keyedAgg(2, "counts", from(1), []string{"k"})
	updates.GetKeyedAggregate().Emit = planpb.KeyedAggregate_EMIT_UPDATES
	cases := map[string]*planpb.JobPlan{
		"sink":        job(source(1, "src"), sel(2, 1), sink(3, "out", from(2))),
		"map_batches": job(source(1, "src"), sel(2, 1), mb, sumAgg(4, from(3), []string{"k"}, "v"), sink(5, "out", from(4))),
		"union": job(source(1, "src"), sel(2, 1), source(3, "src2"),
			union(4, "u", []*planpb.Input{from(2), from(3)}), sumAgg(5, from(4), []string{"k"}, "v"), sink(6, "out", from(5))),
		"join": job(source(1, "src"), sel(2, 1), source(3, "src2"), joinNode, sink(5, "out", from(4))),
		"changelog": job(source(1, "src"), updates, selectNode(3, "sel", from(2), passThrough("k", "n"), uid("sel")),
			sumAgg(4, fromP(3, PartitionHash, "n"), []string{"n"}, ""), sink(5, "out", from(4))),
	}
	for name, j := range cases {
		t.Run(name, func(t *testing.T) {
			g := mustPlan(t, j, Options{DefaultParallelism: 2})
			for _, o := range g.Operators {
				if len(o.Pruned) > 0 {
					t.Errorf("%s pruned %v:\n%s", describe(o), o.Pruned, g.Explain())
				}
			}
		})
	}
}

func TestPruneFollowsLateRowsToTheWindowsInput(t *testing.T) {
	wm := node(3, "wm", []*planpb.Input{from(2)}, nil)
	wm.Kind = &planpb.Node_WatermarkAssigner{WatermarkAssigner: &planpb.WatermarkAssigner{TimeColumn: "ts"}}
	win := node(4, "win", []*planpb.Input{from(3)}, nil)
	win.Kind = &planpb.Node_WindowAggregate{WindowAggregate: &planpb.WindowAggregate{
		TimeColumn: "ts", Kind: planpb.WindowAggregate_TUMBLE, SizeMs: 1000, Keys: []string{"k"},
		Aggregates: []*planpb.Aggregate{{Function: "sum", Column: "v", Name: "total"}},
	}}
	late := &planpb.Input{Node: 4, Output: planpb.Input_LATE_ROWS}
	lateCount := sumAgg(6, late, []string{"extra"}, "")
	mk := func(withLate bool) *planpb.JobPlan {
		nodes := []*planpb.Node{source(1, "src"), selectNode(2, "sel", from(1), passThrough("ts", "k", "v", "extra", "unread"), uid("sel")),
			wm, win, sink(5, "out", from(4))}
		if withLate {
			win.GetWindowAggregate().LateRows = planpb.WindowAggregate_KEEP
			nodes = append(nodes, lateCount, sink(7, "late", from(6)))
		}
		return job(nodes...)
	}
	g := mustPlan(t, mk(false), Options{DefaultParallelism: 2})
	if got := selectNames(op(t, g, "sel")); !slices.Equal(got, []string{"ts", "k", "v"}) {
		t.Errorf("select columns %v, want [ts k v]", got)
	}
	g = mustPlan(t, mk(true), Options{DefaultParallelism: 2})
	if got := selectNames(op(t, g, "sel")); !slices.Equal(got, []string{"ts", "k", "v", "extra"}) {
		t.Errorf("select columns %v, want [ts k v extra]: the late rows' aggregation reads extra", got)
	}
}

func TestPruneKeepsOneColumnForTheRowCount(t *testing.T) {
	count := keyedAgg(3, "count", from(2), nil)
	j := job(source(1, "src"), selectNode(2, "sel", from(1), passThrough("a", "b"), uid("sel")), count, sink(4, "out", from(3)))
	g := mustPlan(t, j, Options{DefaultParallelism: 2})
	sel := op(t, g, "sel")
	if got := selectNames(sel); !slices.Equal(got, []string{"a"}) || !slices.Equal(sel.Pruned, []string{"b"}) {
		t.Errorf("select columns %v, pruned %v; want [a] and [b]", got, sel.Pruned)
	}
}

func TestPruneConfigIsChecked(t *testing.T) {
	msg := planError(t, jobWith(map[string]string{ConfigPruneColumns: "sometimes"}, source(1, "src"), sink(2, "out", from(1))), Options{})
	wantContains(t, msg, `config pipeline.prune-unread-columns="sometimes": must be true or false`)
}
