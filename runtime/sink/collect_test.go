package sink

import (
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/internal/arrowipc"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
)

// collected opens a collect sink joining batches of batchBytes, and the
// batches it hands over.
func collected(t *testing.T, mem memory.Allocator, batchBytes int) (Writer, *[]arrow.RecordBatch) {
	t.Helper()
	var got []arrow.RecordBatch
	w, err := Open(&planpb.Sink{Kind: &planpb.Sink_Collect{Collect: &planpb.CollectSink{}}}, Config{
		Schema: schema, Parallelism: 1, CollectBatchBytes: batchBytes, Allocator: mem,
		Collect: func(_ int, b arrow.RecordBatch) error { got = append(got, b); return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, b := range got {
			b.Release()
		}
	})
	return w, &got
}

// collectedIDs is the id column of batches, in order, -1 for a null.
func collectedIDs(batches []arrow.RecordBatch) []int64 {
	var out []int64
	for _, b := range batches {
		col := b.Column(0).(*array.Int64)
		for i := range col.Len() {
			if col.IsNull(i) {
				out = append(out, -1)
			} else {
				out = append(out, col.Value(i))
			}
		}
	}
	return out
}

func writeBatches(t *testing.T, w Writer, mem memory.Allocator, times int) {
	t.Helper()
	for range times {
		b := batch(mem)
		err := w.Write(b)
		b.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestCollectJoinsBatchesInOrderUpToTheSize(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) }) // after the collected batches are released
	one := batch(mem)
	size := arrowipc.BatchBytes(one)
	one.Release()
	w, got := collected(t, mem, 3*size)
	writeBatches(t, w, mem, 7)
	if len(*got) != 2 {
		t.Fatalf("after 7 batches with room for 3: %d handed over, want 2 batches of 3", len(*got))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var rows []int64
	for _, b := range *got {
		rows = append(rows, b.NumRows())
	}
	if want := []int64{9, 9, 3}; !slices.Equal(rows, want) {
		t.Errorf("batches of %v rows, want %v", rows, want)
	}
	want := []int64{}
	for range 7 {
		want = append(want, 1, 2, -1)
	}
	if got := collectedIDs(*got); !slices.Equal(got, want) {
		t.Errorf("ids %v, want %v (in order, nulls kept)", got, want)
	}
	if names := (*got)[0].Column(1).(*array.String); names.Value(4) != `quo"te` {
		t.Errorf("name 4 is %q", names.Value(4))
	}
}

func TestCollectHandsOverHeldRowsBeforeABarrier(t *testing.T) {
	// At-least-once: a restore replays from the checkpoint, so rows before
	// its barrier must have left when it completes.
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) }) // after the collected batches are released
	w, got := collected(t, mem, 1<<30)
	writeBatches(t, w, mem, 2)
	if len(*got) != 0 {
		t.Fatalf("%d batches handed over before the size or a barrier", len(*got))
	}
	if _, err := w.PreCommit(1); err != nil {
		t.Fatal(err)
	}
	if len(*got) != 1 || (*got)[0].NumRows() != 6 {
		t.Fatalf("after the barrier: %d batches, want the 6 rows in one", len(*got))
	}
	// Rows after the barrier are dropped by Abort (a restore replays them).
	writeBatches(t, w, mem, 1)
	w.Abort()
	if len(*got) != 1 {
		t.Errorf("Abort handed over %d batches", len(*got)-1)
	}
	b := batch(mem)
	defer b.Release()
	if err := w.Write(b); err != ErrClosed {
		t.Errorf("Write after Abort: %v, want ErrClosed", err)
	}
}

func TestCollectWithoutSizeHandsOverEachBatch(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) }) // after the collected batches are released
	w, got := collected(t, mem, 0)
	writeBatches(t, w, mem, 2)
	if len(*got) != 2 {
		t.Errorf("%d batches handed over, want each of the 2 at once", len(*got))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}
