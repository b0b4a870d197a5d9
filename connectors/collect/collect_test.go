package collect

import (
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/internal/arrowipc"
	"github.com/flinkgo/flinkgo/runtime/connector"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
)

// collected opens a collect sink joining batches of batchBytes, and the
// batches it hands over.
func collected(t *testing.T, mem memory.Allocator, batchBytes int) (connector.Writer, *[]arrow.RecordBatch) {
	t.Helper()
	var got []arrow.RecordBatch
	w, err := open(connector.WriterConfig{
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

func writeBatches(t *testing.T, w connector.Writer, mem memory.Allocator, times int) {
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
	if err := w.Write(b); err != connector.ErrClosed {
		t.Errorf("Write after Abort: %v, want connector.ErrClosed", err)
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

var schema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

func batch(mem memory.Allocator) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2, 0}, []bool{true, true, false})
	b.Field(1).(*array.StringBuilder).AppendValues([]string{"a", `quo"te`, "c"}, nil)
	return b.NewRecordBatch()
}

// open opens a collect writer through the connector, as the runtime does.
func open(cfg connector.WriterConfig) (connector.Writer, error) {
	snk, err := Sink().Decode(&planpb.Sink{Kind: &planpb.Sink_Collect{Collect: &planpb.CollectSink{}}})
	if err != nil {
		return nil, err
	}
	return snk.Open(cfg)
}

func TestCollectRetains(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	var got []arrow.RecordBatch
	w, err := open(connector.WriterConfig{Schema: schema, Parallelism: 1,
		Collect: func(_ int, b arrow.RecordBatch) error { got = append(got, b); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	b := batch(mem)
	if err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	b.Release()
	if len(got) != 1 || got[0].NumRows() != 3 {
		t.Fatalf("collected %v", got)
	}
	got[0].Release()
}
