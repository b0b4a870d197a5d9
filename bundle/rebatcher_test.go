package bundle

import (
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func newTestRebatcher(t *testing.T, mem memory.Allocator, rows int, maxBytes int64) *Rebatcher {
	t.Helper()
	r, err := NewRebatcher(RebatcherConfig{Rows: rows, MaxBytes: maxBytes, Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// add feeds a batch of n rows from start and returns the outputs' row counts
// and values, releasing them.
func add(t *testing.T, r *Rebatcher, mem memory.Allocator, start, n int64) (rows []int64, vals []int64) {
	t.Helper()
	b := makeBatch(t, mem, start, n)
	defer b.Release()
	out, err := r.Add(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range out {
		rows = append(rows, o.NumRows())
		vals = append(vals, values(o)...)
		o.Release()
	}
	return rows, vals
}

func TestRebatcherCutsExactRows(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	r := newTestRebatcher(t, mem, 4, 1<<20)
	defer r.Release()

	var gotRows, gotVals []int64
	for _, in := range []struct{ start, n int64 }{{0, 3}, {3, 5}, {8, 2}, {10, 9}} {
		rows, vals := add(t, r, mem, in.start, in.n)
		gotRows = append(gotRows, rows...)
		gotVals = append(gotVals, vals...)
	}
	if want := []int64{4, 4, 4, 4}; !slices.Equal(gotRows, want) {
		t.Fatalf("batch rows %v, want %v", gotRows, want)
	}
	if r.Buffered() != 3 {
		t.Fatalf("Buffered() = %d, want 3", r.Buffered())
	}
	rest, err := r.Flush()
	if err != nil || rest == nil {
		t.Fatalf("Flush() = %v, %v; want the 3 buffered rows", rest, err)
	}
	gotVals = append(gotVals, values(rest)...)
	rest.Release()
	if !slices.Equal(gotVals, seq(0, 19)) {
		t.Fatalf("values %v, want 0..18 in order", gotVals)
	}
	if r.Buffered() != 0 {
		t.Fatalf("Buffered() after Flush = %d", r.Buffered())
	}
	if rest, err := r.Flush(); rest != nil || err != nil {
		t.Fatalf("Flush() of nothing = %v, %v; want nil, nil", rest, err)
	}
}

func TestRebatcherPassesExactBatchThrough(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	r := newTestRebatcher(t, mem, 10, 1<<20)
	defer r.Release()

	b := makeBatch(t, mem, 0, 10)
	out, err := r.Add(b)
	if err != nil {
		t.Fatal(err)
	}
	defer releaseAll(out)
	if len(out) != 1 || out[0] != b {
		t.Fatalf("got %d batches, want the input batch itself", len(out))
	}
	b.Release() // the caller's reference: out[0] must hold its own
	if got := values(out[0]); !slices.Equal(got, seq(0, 10)) {
		t.Fatalf("values %v", got)
	}
}

func TestRebatcherCapsBytes(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)

	b := makeBatch(t, mem, 0, 100)
	defer b.Release()
	perRow := bytesPerRow(b)
	if perRow < 8 {
		t.Fatalf("estimated %d bytes per int64 row, want at least 8", perRow)
	}

	r := newTestRebatcher(t, mem, 100, 10*perRow)
	defer r.Release()
	out, err := r.Add(b)
	if err != nil {
		t.Fatal(err)
	}
	var rows, vals []int64
	for _, o := range out {
		rows = append(rows, o.NumRows())
		vals = append(vals, values(o)...)
		o.Release()
	}
	if want := slices.Repeat([]int64{10}, 10); !slices.Equal(rows, want) {
		t.Fatalf("batch rows %v, want %v: a batch over MaxBytes must be cut into fewer rows", rows, want)
	}
	if !slices.Equal(vals, seq(0, 100)) {
		t.Fatalf("values %v", vals)
	}
	if r.Buffered() != 0 {
		t.Fatalf("Buffered() = %d, want 0", r.Buffered())
	}
}

func TestRebatcherSendsAtLeastOneRow(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	r := newTestRebatcher(t, mem, 100, 1) // every row is over the cap
	defer r.Release()

	rows, vals := add(t, r, mem, 0, 5)
	if want := slices.Repeat([]int64{1}, 5); !slices.Equal(rows, want) {
		t.Fatalf("batch rows %v, want %v", rows, want)
	}
	if !slices.Equal(vals, seq(0, 5)) {
		t.Fatalf("values %v", vals)
	}
}

func TestRebatcherRejectsOtherSchema(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	r := newTestRebatcher(t, mem, 10, 1<<20)
	defer r.Release()
	add(t, r, mem, 0, 3)

	sb := array.NewStringBuilder(mem)
	sb.Append("a")
	col := sb.NewArray()
	sb.Release()
	other := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String}}, nil), []arrow.Array{col}, 1)
	col.Release()
	defer other.Release()
	if _, err := r.Add(other); err == nil || !strings.Contains(err.Error(), "schema") {
		t.Fatalf("Add with another schema: got %v, want a schema error", err)
	}
}

func TestRebatcherReleaseDropsBuffered(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	r := newTestRebatcher(t, mem, 10, 1<<20)
	add(t, r, mem, 0, 3)
	add(t, r, mem, 3, 4)
	r.Release()
	if r.Buffered() != 0 {
		t.Fatalf("Buffered() after Release = %d", r.Buffered())
	}
}

func TestNewRebatcherReportsEveryProblem(t *testing.T) {
	_, err := NewRebatcher(RebatcherConfig{Rows: 0, MaxBytes: -1})
	if err == nil {
		t.Fatal("want an error")
	}
	for _, want := range []string{"Rows is 0", "MaxBytes is -1"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}
