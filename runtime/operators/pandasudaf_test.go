package operators

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/internal/arrowipc"
	"github.com/flinkgo/flinkgo/runtime/checkpoint"
	"github.com/flinkgo/flinkgo/runtime/operator"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/state"
	"github.com/flinkgo/flinkgo/udf/bridge"
	"github.com/flinkgo/flinkgo/udf/bridge/bridgetest"
	"github.com/flinkgo/flinkgo/udf/bridge/pluginrunner"
	"github.com/flinkgo/flinkgo/udf/bridge/proto/workerpb"
)

// The window operator's side of pandas UDAFs, against fake runners whose
// "UDAF" sums v per group in Go (the contract: a group column, one result
// row per group); the Python side is tested end to end in
// python/tests/test_udaf.py.

// udafSpec is windowSpec's window with count, sum(v) and a UDAF of v
// (concurrency workers).
func udafSpec(kind plan.WindowKind, size, slide, gap, lateness int64, concurrency int32) *plan.WindowAggregate {
	w := windowSpec(kind, size, slide, gap, lateness, true)
	rs, err := arrowipc.EncodeSchema(arrow.NewSchema([]arrow.Field{{Name: "gosum", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil))
	if err != nil {
		panic(err)
	}
	w.Aggregates = []*plan.Aggregate{
		{Function: "count", Name: "n"}, {Function: "sum", Column: "v", Name: "sum"},
		{Function: plan.UDAFFunction, Name: "gosum", Args: []string{"v"}, UDF: &workerpb.UdfSpec{
			Name: "gosum", Payload: []byte{1}, FuncType: workerpb.FuncType_FUNC_TYPE_PANDAS_AGGREGATE, ReturnSchema: rs, Concurrency: concurrency}},
	}
	return w
}

func udafOutputSchema() *arrow.Schema {
	ts := &arrow.TimestampType{Unit: arrow.Millisecond}
	return arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "window_start", Type: ts}, {Name: "window_end", Type: ts},
		{Name: "n", Type: arrow.PrimitiveTypes.Int64}, {Name: "sum", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "gosum", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil)
}

// fakeUDAFs makes runners that sum column 1 per group of column 0, and
// records every runner made.
type fakeUDAFs struct {
	mu      sync.Mutex
	runners []*bridgetest.Runner
	fail    error
}

func (f *fakeUDAFs) newRunner(o pluginrunner.Options) (bridge.Runner, error) {
	mem := o.Allocator
	r := bridgetest.NewRunner(nil)
	r.Transform = func(_ int64, b arrow.RecordBatch) (arrow.RecordBatch, error) {
		if f.fail != nil {
			return nil, f.fail
		}
		groups, err := bridge.GroupCount(b)
		if err != nil {
			return nil, err
		}
		sums := make([]int64, groups)
		ids, vs := b.Column(0).(*array.Int32), b.Column(1).(*array.Int64)
		for i := range int(b.NumRows()) {
			if vs.IsValid(i) {
				sums[ids.Value(i)] += vs.Value(i)
			}
		}
		bld := array.NewInt64Builder(mem)
		defer bld.Release()
		bld.AppendValues(sums, nil)
		col := bld.NewArray()
		defer col.Release()
		return array.NewRecordBatch(o.OutputSchema, []arrow.Array{col}, groups), nil
	}
	f.mu.Lock()
	f.runners = append(f.runners, r)
	f.mu.Unlock()
	return bridgetest.Cancelable{Runner: r}, nil
}

// calls is every Process call's rows, over all runners.
func (f *fakeUDAFs) calls() (rows []int64, perRunner []int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range f.runners {
		rows = append(rows, r.ProcessedRows()...)
		perRunner = append(perRunner, len(r.ProcessedRows()))
	}
	return rows, perRunner
}

// feedRows gives hs the rows in batches of 25, each harness the keys of
// its key groups, with a watermark behind the disorder after each batch.
func feedRows(t *testing.T, hs []*windowHarness, rows []windowRow, disorder int64, maxTs *int64) {
	for i := 0; i < len(rows); i += 25 {
		batch := rows[i:min(i+25, len(rows))]
		for _, h := range hs {
			kgs := h.op.(*windowProc).keyed.keys
			var mine []windowRow
			for _, r := range batch {
				if kg := kgOf(t, r.k); kg >= int(kgs.Start) && kg <= int(kgs.End) {
					mine = append(mine, r)
				}
			}
			if len(mine) > 0 {
				h.process(mine...)
			}
		}
		for _, r := range batch {
			*maxTs = max(*maxTs, r.t)
		}
		for _, h := range hs {
			h.watermark(*maxTs - disorder - 1)
		}
	}
}

// checkUDAFColumn checks that every output row's UDAF result is its
// built-in sum (both over the window's rows).
func checkUDAFColumn(t *testing.T, rows []string) {
	t.Helper()
	for _, r := range rows {
		f := strings.Fields(r) // key [start,end) n sum gosum
		if len(f) != 5 || f[3] != f[4] {
			t.Fatalf("the UDAF's result differs from the built-in sum: %q", r)
		}
	}
}

// Firing windows hand their rows to the workers in batches of many
// windows (at most batch_size rows, never one call per window), round-robin
// over concurrency workers; each window's UDAF result is computed over
// exactly its rows: slices merged for hop and cumulate, sessions merged,
// late rows within the lateness re-firing their window.
func TestWindowUDAFBatchesManyWindows(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec *plan.WindowAggregate
	}{
		{"tumble", udafSpec(plan.Tumble, 50, 0, 0, 0, 2)},
		{"hop with lateness", udafSpec(plan.Hop, 100, 20, 0, 30, 2)},
		{"session with lateness", udafSpec(plan.Session, 0, 0, 30, 30, 2)},
		{"cumulate", udafSpec(plan.Cumulate, 100, 25, 0, 0, 2)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const batch = 40
			fakes := &fakeUDAFs{}
			opts := Options{KeyedCacheGroups: 2, NewRunner: fakes.newRunner}
			h := newWindowHarnessWith(t, tc.spec, udafOutputSchema(), opts, batch, state.KeyGroupRange{Start: 0, End: 127}, 1, 0, nil, "")
			rows := randomRows(rand.New(rand.NewPCG(3, 9)), 2000, 60)
			// Fire rarely: each watermark fires many windows at once.
			maxTs := int64(math.MinInt64)
			for i := 0; i < len(rows); i += 500 {
				part := rows[i : i+500]
				h.process(part...)
				for _, r := range part {
					maxTs = max(maxTs, r.t)
				}
				h.watermark(maxTs - 61)
			}
			h.watermark(math.MaxInt64)
			got := h.take()
			checkUDAFColumn(t, got)
			calls, perRunner := fakes.calls()
			if len(perRunner) != 2 || perRunner[0] == 0 || perRunner[1] == 0 {
				t.Fatalf("calls per worker %v: want 2 workers, both used", perRunner)
			}
			// The windows' rows, each sent once per firing: many windows a call.
			if len(calls) == 0 || len(calls)*4 > len(got) {
				t.Fatalf("%d worker calls for %d window rows: want many windows per call", len(calls), len(got))
			}
			for _, n := range calls {
				if n > batch {
					t.Fatalf("a call of %d rows, above batch_size %d (calls %v)", n, batch, calls)
				}
			}
			if err := h.op.Finish(t.Context(), h.emit); err != nil {
				t.Fatal(err)
			}
			for _, r := range fakes.runners {
				if !r.CloseReturned() {
					t.Fatal("Finish did not close a worker")
				}
			}
		})
	}
}

// The kept rows are keyed state: a checkpoint taken mid-stream by one
// subtask, restored by two that split the key groups, gives the UDAF
// results of an uninterrupted run.
func TestWindowUDAFRestoresAtAnotherParallelism(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec *plan.WindowAggregate
	}{
		{"hop", udafSpec(plan.Hop, 100, 20, 0, 30, 1)},
		{"session", udafSpec(plan.Session, 0, 0, 30, 30, 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const disorder = 40
			rows := randomRows(rand.New(rand.NewPCG(7, 7)), 400, disorder)
			all := state.KeyGroupRange{Start: 0, End: 127}
			storage := state.Storage{Root: t.TempDir()}
			if err := storage.Init(); err != nil {
				t.Fatal(err)
			}
			harness := func(kgs state.KeyGroupRange, p, subtask int, restored *checkpoint.OperatorState) *windowHarness {
				opts := Options{KeyedCacheGroups: 2, NewRunner: (&fakeUDAFs{}).newRunner}
				return newWindowHarnessWith(t, tc.spec, udafOutputSchema(), opts, 64, kgs, p, subtask, restored, storage.Root)
			}
			maxTs := int64(math.MinInt64)
			one := harness(all, 1, 0, nil)
			feedRows(t, []*windowHarness{one}, rows[:200], disorder, &maxTs)
			st := one.checkpoint(1, storage.Root)
			got := one.take()
			restored := &checkpoint.OperatorState{UID: "window", Parallelism: 1, Subtasks: []checkpoint.SubtaskState{st}}
			two := []*windowHarness{
				harness(state.KeyGroupRange{Start: 0, End: 63}, 2, 0, restored),
				harness(state.KeyGroupRange{Start: 64, End: 127}, 2, 1, restored),
			}
			feedRows(t, two, rows[200:], disorder, &maxTs)
			for _, h := range two {
				h.watermark(math.MaxInt64)
				got = append(got, h.take()...)
			}
			slices.Sort(got)
			checkUDAFColumn(t, got)
			ref := harness(all, 1, 0, nil)
			maxTs = math.MinInt64
			feedRows(t, []*windowHarness{ref}, rows, disorder, &maxTs)
			ref.watermark(math.MaxInt64)
			expectRows(t, "restored at parallelism 2", got, ref.take()...)
		})
	}
}

// A failing UDAF fails the window's watermark with its error; the kept
// rows are freed (the harness checks the allocator).
func TestWindowUDAFErrorFailsTheFiring(t *testing.T) {
	fakes := &fakeUDAFs{fail: fmt.Errorf("udaf %q raised ZeroDivisionError", "gosum")}
	opts := Options{KeyedCacheGroups: 2, NewRunner: fakes.newRunner}
	h := newWindowHarnessWith(t, udafSpec(plan.Tumble, 50, 0, 0, 0, 1), udafOutputSchema(), opts, 0, state.KeyGroupRange{Start: 0, End: 127}, 1, 0, nil, "")
	h.process(windowRow{k: "a", t: 1, v: 2}, windowRow{k: "b", t: 70, v: 3})
	_, err := h.op.OnWatermark(t.Context(), 200, h.emit)
	if err == nil || !strings.Contains(err.Error(), "gosum") || !strings.Contains(err.Error(), "pandas UDAF") {
		t.Fatalf("err = %v, want the UDAF's error", err)
	}
	h.op.Cancel(err)
}

// A keyed aggregation of a bounded input (final mode) keeps each key's rows
// for its UDAF, through checkpoints that move the groups out of memory
// (a cache of 2 groups), and computes every key once at the end, many keys
// per worker call.
func TestKeyedAggregateUDAFAcrossCheckpoints(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rs, err := arrowipc.EncodeSchema(arrow.NewSchema([]arrow.Field{{Name: "gosum", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil))
	if err != nil {
		t.Fatal(err)
	}
	spec := &plan.KeyedAggregate{Keys: []string{"k"}, Aggregates: []*plan.Aggregate{
		{Function: "sum", Column: "v", Name: "sum"},
		{Function: plan.UDAFFunction, Name: "gosum", Args: []string{"v"}, UDF: &workerpb.UdfSpec{
			Name: "gosum", Payload: []byte{1}, FuncType: workerpb.FuncType_FUNC_TYPE_PANDAS_AGGREGATE, ReturnSchema: rs}},
	}}
	out := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "sum", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "gosum", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil)
	fakes := &fakeUDAFs{}
	storage := state.Storage{Root: t.TempDir()}
	if err := storage.Init(); err != nil {
		t.Fatal(err)
	}
	c := &operator.Context{
		Op: &plan.Operator{Name: "agg", UID: "agg", Kind: plan.KindKeyedAggregate, BatchSize: 1000,
			Node: &plan.Node{Kind: plan.KindKeyedAggregate, KeyedAggregate: spec}},
		Parallelism: 1, MaxParallelism: 128, In: []*arrow.Schema{windowTestInput}, Out: out, Allocator: mem,
		Counters: &operator.Counters{},
		Keyed:    &operator.KeyedContext{KeyGroups: state.KeyGroupRange{Start: 0, End: 127}, StateDir: t.TempDir()},
	}
	op, err := keyedAggregateKind(Options{KeyedCacheGroups: 2, NewRunner: fakes.newRunner}).New(c)
	if err != nil {
		t.Fatal(err)
	}
	defer op.Release()
	if err := op.Open(t.Context()); err != nil {
		t.Fatal(err)
	}
	h := &windowHarness{t: t, mem: mem, op: op}
	var got []string
	emit := func(_ context.Context, b arrow.RecordBatch) error {
		defer b.Release()
		for row := range int(b.NumRows()) {
			got = append(got, fmt.Sprintf("%s %s %s", b.Column(0).ValueStr(row), b.Column(1).ValueStr(row), b.Column(2).ValueStr(row)))
		}
		return nil
	}
	rows := randomRows(rand.New(rand.NewPCG(1, 2)), 300, 10)
	for i := 0; i < len(rows); i += 50 {
		h.process(rows[i : i+50]...)
		st := checkpoint.SubtaskState{}
		if err := op.SnapshotState(t.Context(), checkpoint.Target{ID: int64(i + 1), Dir: storage.Root}, emit, &st); err != nil {
			t.Fatal(err)
		}
		if err := op.TakePersist()(t.Context(), &st); err != nil {
			t.Fatal(err)
		}
	}
	if err := op.Finish(t.Context(), emit); err != nil {
		t.Fatal(err)
	}
	if len(got) != 5 {
		t.Fatalf("%d groups, want 5: %q", len(got), got)
	}
	for _, r := range got {
		if f := strings.Fields(r); f[1] != f[2] {
			t.Fatalf("the UDAF's result differs from the built-in sum: %q", r)
		}
	}
	if calls, _ := fakes.calls(); len(calls) != 1 || calls[0] != int64(len(rows)) {
		t.Fatalf("worker calls of %v rows for %d keys of %d rows: want one call", calls, len(got), len(rows))
	}
}
