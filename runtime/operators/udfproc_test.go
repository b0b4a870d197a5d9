package operators

import (
	"context"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/runtime/operator"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/udf/bridge"
	"github.com/flinkgo/flinkgo/udf/bridge/bridgetest"
	"github.com/flinkgo/flinkgo/udf/bridge/pluginrunner"
	"github.com/flinkgo/flinkgo/udf/bridge/proto/workerpb"
)

// A UDF operator holds a watermark until the bundle in flight is finished:
// the results of the rows before it are emitted before it goes on, as
// PyFlink does (a worker that answers only when flushed).
func TestUDFForwardsWatermarkAfterItsBundle(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	schema := arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.PrimitiveTypes.Int64}}, nil)
	runner := bridgetest.NewRunner(nil)
	runner.HoldUntilFlush = true
	c := &operator.Context{
		Op: &plan.Operator{Name: "identity", UID: "identity", Kind: plan.KindMapBatches,
			Node: &plan.Node{Kind: plan.KindMapBatches, MapBatches: &plan.MapBatches{Function: &workerpb.UdfSpec{Name: "identity"}}}},
		Parallelism: 1, MaxParallelism: 128, In: []*arrow.Schema{schema}, Out: schema, Allocator: mem,
	}
	op, err := newUDFProc(c, Options{BundleSize: 1 << 20, BundleTime: time.Hour,
		NewRunner: func(pluginrunner.Options) (bridge.Runner, error) { return runner, nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer op.Release()
	if err := op.Open(ctx); err != nil {
		t.Fatal(err)
	}
	var emitted int64
	emit := func(_ context.Context, b arrow.RecordBatch) error {
		emitted += b.NumRows()
		b.Release()
		return nil
	}
	bld := array.NewInt64Builder(mem)
	bld.AppendValues([]int64{1, 2, 3}, nil)
	col := bld.NewArray()
	bld.Release()
	b := array.NewRecordBatch(schema, []arrow.Array{col}, 3)
	col.Release()
	err = op.Process(ctx, 0, b, emit)
	b.Release()
	if err != nil {
		t.Fatal(err)
	}
	if emitted != 0 {
		t.Fatalf("%d rows emitted before the bundle finished; the fake worker holds them", emitted)
	}
	wm, err := op.OnWatermark(ctx, 42, emit)
	if err != nil {
		t.Fatal(err)
	}
	if wm != 42 || emitted != 3 {
		t.Fatalf("OnWatermark returned %v with %d rows emitted before it, want 42 after all 3", wm, emitted)
	}
	if err := op.Finish(ctx, emit); err != nil {
		t.Fatal(err)
	}
}
