package plan

import (
	"strings"
	"testing"

	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
	"github.com/flinkgo/flinkgo/udf/bridge/proto/workerpb"
)

func udafAggregate(name string, batchSize, concurrency int32) *planpb.Aggregate {
	return &planpb.Aggregate{Function: UDAFFunction, Name: name, Args: []string{"x"}, Udf: &workerpb.UdfSpec{
		Name: name, FuncType: workerpb.FuncType_FUNC_TYPE_PANDAS_AGGREGATE, BatchSize: batchSize, Concurrency: concurrency}}
}

func windowNode(id int32, in *planpb.Input, aggs ...*planpb.Aggregate) *planpb.Node {
	n := node(id, "window", []*planpb.Input{in}, nil)
	n.Kind = &planpb.Node_WindowAggregate{WindowAggregate: &planpb.WindowAggregate{
		TimeColumn: "ts", Kind: planpb.WindowAggregate_TUMBLE, SizeMs: 1000, Keys: []string{"k"}, Aggregates: aggs}}
	return n
}

// A window's UDAFs run with the smallest explicit batch_size (else the
// plan's), and explain() lists them with their workers per subtask.
func TestWindowUDAFsBatchSizeAndExplain(t *testing.T) {
	g := mustPlan(t, jobWith(map[string]string{ConfigBatchSize: "777"}, source(1, "src"),
		windowNode(2, from(1), udafAggregate("a", 0, 0), &planpb.Aggregate{Function: "count", Name: "n"}, udafAggregate("b", 50, 3)),
		sink(3, "out", from(2))), Options{})
	if got := g.Operators[1].BatchSize; got != 50 {
		t.Fatalf("batch size %d, want 50", got)
	}
	if e := g.Explain(); !strings.Contains(e, "pandas UDAFs (batch size 50, 3 worker(s) per subtask, many groups per call): a(x) -> a; b(x) [concurrency=3, batch_size=50] -> b") {
		t.Fatalf("explain does not list the UDAFs:\n%s", e)
	}
	g = mustPlan(t, jobWith(map[string]string{ConfigBatchSize: "777"}, source(1, "src"),
		windowNode(2, from(1), udafAggregate("a", 0, 0)), sink(3, "out", from(2))), Options{})
	if got := g.Operators[1].BatchSize; got != 777 {
		t.Fatalf("batch size %d, want the plan's 777", got)
	}
}

func TestUDAFsRefusedWhereTheyCannotRun(t *testing.T) {
	bad := udafAggregate("f", 0, 0)
	bad.Udf.FuncType = workerpb.FuncType_FUNC_TYPE_PANDAS
	bad.Args = nil
	msg := planError(t, job(source(1, "src"), windowNode(2, from(1), bad), sink(3, "out", from(2))), Options{})
	for _, want := range []string{`udaf "f" has func_type FUNC_TYPE_PANDAS`, `udaf "f" has no argument columns`} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not say %q", msg, want)
		}
	}
	// A keyed aggregation: bounded input and final mode only.
	unbounded := source(1, "src")
	unbounded.GetSource().GetDatagen().Rows = 0
	agg := keyedAgg(2, "agg", from(1), []string{"k"})
	agg.GetKeyedAggregate().Aggregates = append(agg.GetKeyedAggregate().Aggregates, udafAggregate("f", 0, 0))
	msg = planError(t, job(unbounded, agg, sink(3, "out", from(2))), Options{})
	if !strings.Contains(msg, `the pandas UDAF "f" aggregates a key's rows once, at the end of the input, but a source upstream never ends`) {
		t.Errorf("unbounded input: %s", msg)
	}
	agg.GetKeyedAggregate().Emit = planpb.KeyedAggregate_EMIT_UPDATES
	msg = planError(t, job(source(1, "src"), agg, sink(3, "out", from(2))), Options{})
	if !strings.Contains(msg, `emit="updates" would need it to be incremental`) {
		t.Errorf("updates mode: %s", msg)
	}
	agg.GetKeyedAggregate().Emit = planpb.KeyedAggregate_EMIT_AUTO
	mustPlan(t, job(source(1, "src"), agg, sink(3, "out", from(2))), Options{})
	// Over the retractions of an updating aggregation: a pandas UDAF has
	// no way to take a row back.
	over := keyedAgg(3, "agg", fromP(2, PartitionHash, "x"), []string{"x"})
	over.GetKeyedAggregate().Aggregates = append(over.GetKeyedAggregate().Aggregates, udafAggregate("f", 0, 0))
	msg = planError(t, job(source(1, "src"), updatesAgg(2, "counts", 1, "x"), over, sink(4, "out", from(3))), Options{})
	if !strings.Contains(msg, `has pandas UDAFs, which cannot take rows back: its input is a retract stream made by "counts"`) {
		t.Errorf("changelog input: %s", msg)
	}
}
