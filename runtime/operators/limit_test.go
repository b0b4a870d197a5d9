package operators

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/runtime/checkpoint"
	"github.com/flinkgo/flinkgo/runtime/operator"
	"github.com/flinkgo/flinkgo/runtime/plan"
)

// A limit passes exactly n rows over several batches, ends its input once
// they passed, saves its count, and a limit restored from that count
// passes only the rows left.
func TestLimitPassesNRowsAndRestoresItsCount(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	schema := arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.PrimitiveTypes.Int64}}, nil)
	batch := func(from, n int64) arrow.RecordBatch {
		b := array.NewInt64Builder(mem)
		defer b.Release()
		for i := range n {
			b.Append(from + i)
		}
		col := b.NewInt64Array()
		defer col.Release()
		return array.NewRecordBatch(schema, []arrow.Array{col}, n)
	}
	build := func(n int64, restored *checkpoint.OperatorState) (operator.Operator, *int) {
		ended := 0
		c := &operator.Context{
			Op:          &plan.Operator{Name: "limit", UID: "limit", Kind: plan.KindLimit, Node: &plan.Node{Kind: plan.KindLimit, Limit: &plan.Limit{N: n}}},
			Parallelism: 1, In: []*arrow.Schema{schema}, Out: schema, Allocator: mem, Restored: restored,
			EndInput: func() { ended++ },
		}
		op, err := limitKind().New(c)
		if err != nil {
			t.Fatal(err)
		}
		if err := op.Open(ctx); err != nil {
			t.Fatal(err)
		}
		return op, &ended
	}
	var got []int64
	collect := func(_ context.Context, b arrow.RecordBatch) error {
		defer b.Release()
		got = append(got, b.Column(0).(*array.Int64).Int64Values()...)
		return nil
	}
	feed := func(op operator.Operator, from, n int64) {
		b := batch(from, n)
		defer b.Release()
		if err := op.Process(ctx, 0, b, collect); err != nil {
			t.Fatal(err)
		}
	}

	op, ended := build(7, nil)
	feed(op, 0, 4)
	var st checkpoint.SubtaskState
	if err := op.SnapshotState(ctx, checkpoint.Target{ID: 1}, collect, &st); err != nil {
		t.Fatal(err)
	}
	feed(op, 4, 4) // 3 of these pass
	feed(op, 8, 4) // rows in flight after the end: dropped
	op.Release()
	if len(got) != 7 || got[6] != 6 || *ended == 0 {
		t.Fatalf("passed %v, ended %d times", got, *ended)
	}

	// Restored from the checkpoint after 4 rows: 3 more pass.
	got = nil
	op, ended = build(7, &checkpoint.OperatorState{UID: "limit", Subtasks: []checkpoint.SubtaskState{st}})
	feed(op, 100, 10)
	op.Release()
	if len(got) != 3 || *ended == 0 {
		t.Fatalf("after restore passed %v, ended %d times", got, *ended)
	}

	// Restored with its rows all passed: it ends its input at Open.
	if err := op.SnapshotState(ctx, checkpoint.Target{ID: 2}, collect, &st); err != nil {
		t.Fatal(err)
	}
	op, ended = build(7, &checkpoint.OperatorState{UID: "limit", Subtasks: []checkpoint.SubtaskState{st}})
	op.Release()
	if *ended != 1 {
		t.Fatalf("a satisfied limit restored: ended %d times at Open, want 1", *ended)
	}
}
