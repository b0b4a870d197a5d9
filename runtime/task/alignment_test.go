package task

import (
	"context"
	"errors"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/runtime/operator"
	"github.com/flinkgo/flinkgo/runtime/partition"
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
	in := newInbox(16)
	in.connect()
	in.connect()
	return &Task{in: in, head: head, links: []*link{head}, coord: &ackCoordinator{},
		valve: watermark.NewValve(2), signal: make(chan struct{}, 1), ended: make([]bool, 2)}
}

// keyedParts is what the hash exchange into a keyed aggregation sends its
// consumers: a batch of rows (id, k = id % 10) split by k over 2 channels,
// each part a batch that compute.Take allocated, as in the failover test.
func keyedParts(t *testing.T, mem memory.Allocator, rows int) []arrow.RecordBatch {
	t.Helper()
	ids, keys := array.NewInt64Builder(mem), array.NewInt64Builder(mem)
	defer ids.Release()
	defer keys.Release()
	for i := range rows {
		ids.Append(int64(i))
		keys.Append(int64(i % 10))
	}
	idCol, keyCol := ids.NewArray(), keys.NewArray()
	defer idCol.Release()
	defer keyCol.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "k", Type: arrow.PrimitiveTypes.Int64}}, nil)
	b := array.NewRecordBatch(schema, []arrow.Array{idCol, keyCol}, int64(rows))
	defer b.Release()
	p, err := partition.New(partition.Hash, partition.Config{NumChannels: 2, KeyColumns: []int{1}, MaxParallelism: 128, Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	parts, err := p.Split(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != 2 {
		partition.ReleaseParts(parts)
		t.Fatalf("%d parts, want the keys over both channels", len(parts))
	}
	out := make([]arrow.RecordBatch, len(parts))
	for i, part := range parts {
		out[i] = part.Batch
	}
	return out
}

// A task that fails while it holds batches back (a producer's batches
// after its barrier, during an alignment, or the held-back batches not yet
// replayed) frees them: they are in no inbox that the attempt drains.
// Without it, this test leaks what TestFailoverKeepsFileSinkExactlyOnce's
// checked allocator reported: 1280- and 1920-byte columns allocated by
// compute.Take (KernelCtx.Allocate), the hash exchange's parts of a 400-row
// batch (160 and 240 rows of 4 and 6 keys).
func TestFailedTaskFreesTheBatchesItHoldsBack(t *testing.T) {
	for _, tc := range []struct {
		name string
		msgs func(parts []arrow.RecordBatch) []message
	}{
		{
			// Producer 0's batches after its barrier wait for producer 1's
			// barrier; producer 1's batch fails the task meanwhile.
			name: "blocked during alignment",
			msgs: func(parts []arrow.RecordBatch) []message {
				return []message{
					{producer: 0, barrier: 1},
					{producer: 0, batch: parts[0]},
					{producer: 0, batch: parts[1]},
					{producer: 1, batch: parts[2]},
				}
			},
		},
		{
			// A newer checkpoint's barrier gives up the alignment: the held-
			// back batches are replayed, and the first fails the task.
			name: "replay after an alignment given up",
			msgs: func(parts []arrow.RecordBatch) []message {
				parts[2].Release()
				return []message{
					{producer: 0, barrier: 1},
					{producer: 0, batch: parts[0]},
					{producer: 0, batch: parts[1]},
					{producer: 1, barrier: 2},
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			tk := twoProducerTask(failingOperator{})
			small := keyedParts(t, mem, 10)
			small[1].Release()
			parts := append(keyedParts(t, mem, 400), small[0])
			for _, m := range tc.msgs(parts) {
				if err := tk.in.put(context.Background(), m); err != nil {
					t.Fatal(err)
				}
			}
			err := tk.Run(context.Background())
			if !errors.Is(err, errInjected) {
				t.Fatalf("Run = %v, want the injected failure", err)
			}
			tk.in.drain() // as the attempt does once no task runs
		})
	}
}
