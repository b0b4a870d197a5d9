package plan

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
)

func lateRowsOf(id int32) *planpb.Input {
	return &planpb.Input{Node: id, Output: planpb.Input_LATE_ROWS}
}

// A window with late_rows=KEEP has a second output: the edges reading it
// say so, chain like any forward edge, and carry the window's input
// schema; explain() shows them.
func TestWindowLateRowsAreASecondOutput(t *testing.T) {
	w := windowNode(2, from(1), &planpb.Aggregate{Function: "count", Name: "n"})
	w.GetWindowAggregate().LateRows = planpb.WindowAggregate_KEEP
	w.Uid = "w"
	g := mustPlan(t, job(source(1, "src"), w, sink(3, "out", from(2), uid("out")),
		filterNode(4, "late filter", lateRowsOf(2), col("ok"), uid("late")), sink(5, "late out", from(4), uid("late-out"))), Options{})
	main, late := edge(t, g, "w", "out"), edge(t, g, "w", "late")
	if main.FromOutput != MainOutput || late.FromOutput != LateRowsOutput {
		t.Fatalf("outputs: main edge %d, late edge %d", main.FromOutput, late.FromOutput)
	}
	if op(t, g, "late").ChainID != op(t, g, "w").ChainID || op(t, g, "out").ChainID != op(t, g, "w").ChainID {
		t.Fatalf("the window's outputs are not chained to it:\n%s", g.Explain())
	}
	wantContains(t, g.Explain(), "input #1 late rows: forward", "later rows to its late-rows output")

	in := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.BinaryTypes.String}, {Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_ms}}, nil)
	out := arrow.NewSchema([]arrow.Field{{Name: "n", Type: arrow.PrimitiveTypes.Int64}}, nil)
	schemas := []*arrow.Schema{in, out, out, in, in}
	if got := g.EdgeSchema(late, schemas); got != in {
		t.Fatalf("late rows schema %s, want the window's input %s", got, in)
	}
	if got := g.EdgeSchema(main, schemas); got != out {
		t.Fatalf("main schema %s, want the window's output %s", got, out)
	}
}

// An interval join with late_rows=KEEP has one late-rows output per
// input, each with that input's schema.
func TestIntervalJoinLateRowsPerSide(t *testing.T) {
	spec := &planpb.IntervalJoin{LeftKeys: []string{"a"}, RightKeys: []string{"x"}, LeftTime: "lt", RightTime: "rt",
		LateRows: planpb.WindowAggregate_KEEP}
	right := &planpb.Input{Node: 3, Output: planpb.Input_LATE_ROWS_RIGHT}
	g := mustPlan(t, job(source(1, "l", uid("l")), source(2, "r", uid("r")), intervalJoin(3, "join", from(1), from(2), spec, uid("join")),
		sink(4, "out", from(3), uid("out")), sink(5, "left late", lateRowsOf(3), uid("left late")), sink(6, "right late", right, uid("right late"))),
		Options{DefaultParallelism: 2})
	l := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64}}, nil)
	r := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int32}}, nil)
	joined := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64}, {Name: "x", Type: arrow.PrimitiveTypes.Int32}}, nil)
	schemas := []*arrow.Schema{l, r, joined, joined, l, r}
	for sinkUID, want := range map[string]*arrow.Schema{"out": joined, "left late": l, "right late": r} {
		if got := g.EdgeSchema(edge(t, g, "join", sinkUID), schemas); got != want {
			t.Errorf("%s reads %s, want %s", sinkUID, got, want)
		}
	}
	wantContains(t, g.Explain(), "input #2 late rows: forward", "input #2 late rows of its right input: forward",
		"rows behind the watermark to the late-rows outputs of their side")
	spec.LateRows = planpb.WindowAggregate_DROP
	msg := planError(t, job(source(1, "l"), source(2, "r"), intervalJoin(3, "join", from(1), from(2), spec), sink(4, "out", right)), Options{})
	wantContains(t, msg, `reads the late rows of node 3 "join" (no uid), which drops them: give it late_rows="keep"`)
	w := windowNode(2, from(1), &planpb.Aggregate{Function: "count", Name: "n"})
	w.GetWindowAggregate().LateRows = planpb.WindowAggregate_KEEP
	msg = planError(t, job(source(1, "src"), w, sink(3, "out", &planpb.Input{Node: 2, Output: planpb.Input_LATE_ROWS_RIGHT})), Options{})
	wantContains(t, msg, `reads the right input's late rows of node 2 "window" (no uid), which is not an interval join`)
}

// Reading late rows of what has none is a planning error naming the node.
func TestLateRowsRefusedWhereThereAreNone(t *testing.T) {
	dropping := windowNode(2, from(1), &planpb.Aggregate{Function: "count", Name: "n"})
	msg := planError(t, job(source(1, "src"), dropping, sink(3, "out", lateRowsOf(2))), Options{})
	if !strings.Contains(msg, `reads the late rows of node 2 "window" (no uid), which drops them: give it late_rows="keep"`) {
		t.Errorf("dropping window: %s", msg)
	}
	msg = planError(t, job(source(1, "src"), sink(2, "out", lateRowsOf(1))), Options{})
	if !strings.Contains(msg, `reads the late rows of node 1 "src" (no uid), which is neither a window aggregation nor an interval join`) {
		t.Errorf("a source: %s", msg)
	}
	msg = planError(t, job(source(1, "src"), sink(2, "out", &planpb.Input{Node: 1, Output: 7})), Options{})
	if !strings.Contains(msg, "reads its output 7, which is unknown") {
		t.Errorf("unknown output: %s", msg)
	}
}
