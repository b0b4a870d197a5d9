package task

import (
	"context"
	"strconv"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"go.uber.org/goleak"

	"github.com/flinkgo/flinkgo/runtime/checkpoint"
	"github.com/flinkgo/flinkgo/runtime/operator"
	"github.com/flinkgo/flinkgo/runtime/watermark"
)

// A barrier queued with priority goes ahead of the batches its producer
// queued since its last control message, never ahead of a watermark; it
// takes no space, and it is taken before any other producer's batch.
func TestPriorityBarrierOvertakesBatchesOnly(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	in := newInbox(8)
	in.connect()
	in.connect()
	ctx := context.Background()
	batch := func(id int64) arrow.RecordBatch { return idBatch(t, mem, id) }
	put := func(m message) {
		if err := in.put(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	put(message{producer: 1, batch: batch(100)})
	put(message{producer: 0, batch: batch(1)})
	put(message{producer: 0, event: watermarkEvent, wm: 5})
	put(message{producer: 0, batch: batch(2)})
	if !in.tryPut(message{producer: 0, batch: batch(3)}) {
		t.Fatal("producer 0's queue is full before its share")
	}
	// Producer 0's queue is full (four each): the barrier still goes in.
	in.putPriority(message{producer: 0, barrier: 7})
	var got []string
	for {
		m, ok := in.take(nil)
		if !ok {
			break
		}
		switch {
		case m.barrier > 0:
			got = append(got, "barrier")
			if m.overtook != 2 {
				t.Errorf("the barrier overtook %d batches, want 2", m.overtook)
			}
			over := in.overtaken(0, m.overtook)
			for i, b := range over {
				if id := firstID(b); id != int64(i+2) {
					t.Errorf("overtaken batch %d starts at id %d, want %d", i, id, i+2)
				}
				b.Release()
			}
		case m.event == watermarkEvent:
			got = append(got, "watermark")
		default:
			got = append(got, "batch "+itoa(firstID(m.batch)))
			m.batch.Release()
		}
	}
	want := []string{"batch 100", "batch 1", "watermark", "barrier", "batch 2", "batch 3"}
	if len(got) != len(want) {
		t.Fatalf("taken %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("taken %v, want %v", got, want)
		}
	}
}

// snapshotCounter counts the batches it processes and records, at each
// snapshot, how many it had processed.
type snapshotCounter struct {
	operator.Base
	batches, atSnapshot int
}

func (c *snapshotCounter) Process(context.Context, int, arrow.RecordBatch, operator.Emit) error {
	c.batches++
	return nil
}

func (c *snapshotCounter) SnapshotState(context.Context, checkpoint.Target, operator.Emit, *checkpoint.SubtaskState) error {
	c.atSnapshot = c.batches
	return nil
}

// unalignedCoordinator makes every checkpoint unaligned, into dir, and
// keeps the acknowledgements.
type unalignedCoordinator struct {
	dir  string
	mu   sync.Mutex
	acks []checkpoint.Ack
}

func (c *unalignedCoordinator) Target(id int64) (checkpoint.Target, bool) {
	return checkpoint.Target{ID: id, Dir: c.dir, Unaligned: true}, true
}

func (c *unalignedCoordinator) Acknowledge(_ context.Context, a checkpoint.Ack) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.acks = append(c.acks, a)
	return nil
}

// Unaligned, the task snapshots at the first barrier before processing
// anything queued, and records as channel state what each producer sent
// before its barrier: on producer 0 the batches its barrier overtook, on
// producer 1 the batch it delivered before a watermark (processed after
// the snapshot) and the one the barrier overtook after it. It processes
// every batch as usual, and what it wrote reads back in order.
func TestUnalignedCheckpointRecordsChannelState(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	op := &snapshotCounter{}
	tk := twoProducerTask(op)
	tk.head.op.UID = "agg"
	coord := &unalignedCoordinator{dir: t.TempDir()}
	tk.coord = coord
	ctx := context.Background()
	for _, m := range []message{
		{producer: 0, batch: idBatch(t, mem, 1)},
		{producer: 0, batch: idBatch(t, mem, 2)},
		{producer: 1, batch: idBatch(t, mem, 10)},
		{producer: 1, event: watermarkEvent, wm: watermark.Watermark(3)},
		{producer: 1, batch: idBatch(t, mem, 11)},
	} {
		if err := tk.in.put(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	tk.in.putPriority(message{producer: 0, barrier: 1})
	tk.in.putPriority(message{producer: 1, barrier: 1})
	for p := range 2 {
		if err := tk.in.put(ctx, message{producer: p, batch: idBatch(t, mem, int64(20+p))}); err != nil {
			t.Fatal(err)
		}
		if err := tk.in.put(ctx, message{producer: p}); err != nil {
			t.Fatal(err)
		}
	}
	if err := tk.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if op.atSnapshot != 0 || op.batches != 6 {
		t.Fatalf("snapshot after %d batches (want 0, at the first barrier), %d processed (want 6)", op.atSnapshot, op.batches)
	}
	if len(coord.acks) != 1 || coord.acks[0].Err != nil {
		t.Fatalf("acknowledgements %+v, want one for checkpoint 1", coord.acks)
	}
	inputs := coord.acks[0].States["agg"].Inputs
	if inputs == nil || inputs.Producers != 2 || len(inputs.Channels) != 2 {
		t.Fatalf("channel state %+v, want both producers'", inputs)
	}
	want := map[int][]int64{0: {1, 2}, 1: {10, 11}}
	for _, cs := range inputs.Channels {
		batches, err := checkpoint.ReadChannel(ctx, coord.dir, cs, mem)
		if err != nil {
			t.Fatal(err)
		}
		var ids []int64
		for _, b := range batches {
			ids = append(ids, firstID(b))
			b.Release()
		}
		if len(ids) != len(want[cs.Producer]) || ids[0] != want[cs.Producer][0] || ids[1] != want[cs.Producer][1] {
			t.Errorf("producer %d's channel state holds batches %v, want %v", cs.Producer, ids, want[cs.Producer])
		}
		if cs.Bytes <= 0 || cs.Rows != 4 {
			t.Errorf("producer %d's channel state: %d bytes, %d rows", cs.Producer, cs.Bytes, cs.Rows)
		}
	}
}

// A restored channel's batches are taken before anything a producer
// sends, in their order; the producer waits until they are below its
// share.
func TestPrefilledChannelStateComesFirst(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	in := newInbox(2)
	in.connect()
	in.connect()
	in.prefill(1, 0, []arrow.RecordBatch{idBatch(t, mem, 1), idBatch(t, mem, 2), idBatch(t, mem, 3)})
	late := idBatch(t, mem, 99)
	defer late.Release()
	if in.tryPut(message{producer: 1, batch: late}) {
		t.Fatal("producer 1 could send while its restored channel is above its share")
	}
	if err := in.put(context.Background(), message{producer: 0, batch: idBatch(t, mem, 50)}); err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for {
		m, ok := in.take(nil)
		if !ok {
			break
		}
		ids = append(ids, firstID(m.batch))
		m.batch.Release()
	}
	if len(ids) != 4 || ids[0] != 1 || ids[1] != 2 || ids[2] != 3 || ids[3] != 50 {
		t.Fatalf("taken %v, want the restored 1 2 3 first, then 50", ids)
	}
}

// idBatch is a two-row batch of ids id and id+1000.
func idBatch(t *testing.T, mem memory.Allocator, id int64) arrow.RecordBatch {
	t.Helper()
	b := array.NewInt64Builder(mem)
	defer b.Release()
	b.AppendValues([]int64{id, id + 1000}, nil)
	col := b.NewArray()
	defer col.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	return array.NewRecordBatch(schema, []arrow.Array{col}, 2)
}

func firstID(b arrow.RecordBatch) int64 { return b.Column(0).(*array.Int64).Value(0) }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
