package task

import (
	"context"
	"errors"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/runtime/operator"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/runtime/watermark"
)

// failingOperator fails on the first batch it is given.
type failingOperator struct{ operator.Base }

var errInjected = errors.New("injected failure")

func (failingOperator) Process(context.Context, int, arrow.RecordBatch, operator.Emit) error {
	return errInjected
}

// twoProducerTask is a task whose head reads an inbox of two producers,
// as an aggregation after a hash exchange, with op as its only operator.
func twoProducerTask(op operator.Operator) *Task {
	head := &link{op: &plan.Operator{Name: "agg", UID: "agg"}, proc: op, count: &operator.Counters{},
		wmIn: watermark.MinWatermark, wmOut: watermark.MinWatermark}
	return &Task{in: &inbox{ch: make(chan message, 16), producers: 2}, head: head, links: []*link{head},
		valve: watermark.NewValve(2), signal: make(chan struct{}, 1), ended: make([]bool, 2)}
}

func int64Batch(mem memory.Allocator, n int) arrow.RecordBatch {
	b := array.NewInt64Builder(mem)
	defer b.Release()
	for i := range n {
		b.Append(int64(i))
	}
	col := b.NewArray()
	defer col.Release()
	return array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil), []arrow.Array{col}, int64(n))
}

// A task that fails while it holds batches back (a producer's batches
// after its barrier, during an alignment, or the held-back batches not yet
// replayed) frees them: they are in no inbox that the attempt drains. Before
// the fix the batches a keyed aggregation held back leaked on every
// failure during an alignment (the hash exchange's Take outputs that
// TestFailoverKeepsFileSinkExactlyOnce's checked allocator reported).
func TestFailedTaskFreesTheBatchesItHoldsBack(t *testing.T) {
	for _, tc := range []struct {
		name string
		msgs func(mem memory.Allocator) []message
	}{
		{
			// Producer 0's batch after its barrier waits for producer 1's
			// barrier; producer 1's batch fails the task meanwhile.
			name: "blocked during alignment",
			msgs: func(mem memory.Allocator) []message {
				return []message{
					{producer: 0, barrier: 1},
					{producer: 0, batch: int64Batch(mem, 160)},
					{producer: 0, batch: int64Batch(mem, 240)},
					{producer: 1, batch: int64Batch(mem, 10)},
				}
			},
		},
		{
			// A newer checkpoint's barrier gives up the alignment: the held-
			// back batches are replayed, and the first fails the task.
			name: "replay after an alignment given up",
			msgs: func(mem memory.Allocator) []message {
				return []message{
					{producer: 0, barrier: 1},
					{producer: 0, batch: int64Batch(mem, 160)},
					{producer: 0, batch: int64Batch(mem, 240)},
					{producer: 1, barrier: 2},
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			tk := twoProducerTask(failingOperator{})
			for _, m := range tc.msgs(mem) {
				tk.in.ch <- m
			}
			err := tk.Run(context.Background())
			if !errors.Is(err, errInjected) {
				t.Fatalf("Run = %v, want the injected failure", err)
			}
			drain(tk.in) // as the attempt does once no task runs
		})
	}
}
