package operators

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/runtime/checkpoint"
	"github.com/flinkgo/flinkgo/runtime/operator"
	"github.com/flinkgo/flinkgo/runtime/partition"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/runtime/window"
	"github.com/flinkgo/flinkgo/state"
)

// The input of the window tests: key k, event time t (ms), value v and a
// label s.
var windowTestInput = arrow.NewSchema([]arrow.Field{
	{Name: "k", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "t", Type: &arrow.TimestampType{Unit: arrow.Millisecond}},
	{Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

type windowRow struct {
	k    string
	t, v int64
	s    string
}

// windowResult is one output row, rendered for comparison.
type windowResult struct {
	key        string
	start, end int64
	aggs       string // count, sum, min, max, first, last, count_distinct, mean
}

func (r windowResult) String() string {
	return fmt.Sprintf("%s [%d,%d) %s", r.key, r.start, r.end, r.aggs)
}

type windowHarness struct {
	t        *testing.T
	mem      *memory.CheckedAllocator
	op       operator.Operator
	counters *operator.Counters
	out      []windowResult
	keyed    bool
	// late are the rows sent to the late-rows output (late_rows=KEEP),
	// rendered as "k t v s".
	late []string
}

func windowSpec(kind plan.WindowKind, size, slide, gap, lateness int64, keyed bool) *plan.WindowAggregate {
	w := &plan.WindowAggregate{TimeColumn: "t", Kind: kind, AllowedLatenessMs: lateness, Aggregates: []*plan.Aggregate{
		{Function: "count", Name: "n"}, {Function: "sum", Column: "v", Name: "sum"},
		{Function: "min", Column: "v", Name: "min"}, {Function: "max", Column: "v", Name: "max"},
		{Function: "first", Column: "s", Name: "first"}, {Function: "last", Column: "s", Name: "last"},
		{Function: "count_distinct", Column: "s", Name: "distinct"}, {Function: "mean", Column: "v", Name: "mean"},
	}}
	switch kind {
	case plan.Tumble:
		w.SizeMs = size
	case plan.Hop:
		w.SizeMs, w.SlideMs = size, slide
	case plan.Cumulate:
		w.SizeMs, w.StepMs = size, slide
	case plan.Session:
		w.GapMs = gap
	}
	if keyed {
		w.Keys = []string{"k"}
	}
	return w
}

func windowOutputSchema(keyed bool) *arrow.Schema {
	ts := &arrow.TimestampType{Unit: arrow.Millisecond}
	var fields []arrow.Field
	if keyed {
		fields = append(fields, arrow.Field{Name: "k", Type: arrow.BinaryTypes.String, Nullable: true})
	}
	fields = append(fields, arrow.Field{Name: "window_start", Type: ts}, arrow.Field{Name: "window_end", Type: ts},
		arrow.Field{Name: "n", Type: arrow.PrimitiveTypes.Int64}, arrow.Field{Name: "sum", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		arrow.Field{Name: "min", Type: arrow.PrimitiveTypes.Int64, Nullable: true}, arrow.Field{Name: "max", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		arrow.Field{Name: "first", Type: arrow.BinaryTypes.String, Nullable: true}, arrow.Field{Name: "last", Type: arrow.BinaryTypes.String, Nullable: true},
		arrow.Field{Name: "distinct", Type: arrow.PrimitiveTypes.Int64}, arrow.Field{Name: "mean", Type: arrow.PrimitiveTypes.Float64, Nullable: true})
	return arrow.NewSchema(fields, nil)
}

// newWindowHarness builds one subtask of a window aggregation owning key
// groups kgs of 128, restored from restored when not nil.
func newWindowHarness(t *testing.T, spec *plan.WindowAggregate, kgs state.KeyGroupRange, parallelism, subtask int, restored *checkpoint.OperatorState, base string) *windowHarness {
	t.Helper()
	return newWindowHarnessWith(t, spec, windowOutputSchema(len(spec.Keys) > 0), Options{KeyedCacheGroups: 2}, 0, kgs, parallelism, subtask, restored, base)
}

// newWindowHarnessWith is newWindowHarness with the output schema, the
// operators' options and the batch size of UDAFs given.
func newWindowHarnessWith(t *testing.T, spec *plan.WindowAggregate, out *arrow.Schema, opts Options, batchSize int, kgs state.KeyGroupRange, parallelism, subtask int, restored *checkpoint.OperatorState, base string) *windowHarness {
	t.Helper()
	h := &windowHarness{t: t, mem: memory.NewCheckedAllocator(memory.NewGoAllocator()), counters: &operator.Counters{}, keyed: len(spec.Keys) > 0}
	c := &operator.Context{
		Op: &plan.Operator{Name: "window", UID: "window", Kind: plan.KindWindowAggregate, BatchSize: batchSize,
			Node: &plan.Node{Kind: plan.KindWindowAggregate, WindowAggregate: spec}},
		Subtask: subtask, Parallelism: parallelism, MaxParallelism: 128,
		In: []*arrow.Schema{windowTestInput}, Out: out, Allocator: h.mem, Counters: h.counters,
		Keyed:    &operator.KeyedContext{KeyGroups: kgs, StateDir: t.TempDir()},
		Restored: restored, RestoreBase: base,
	}
	if spec.LateRows == plan.KeepLateRows {
		c.LateRows = []operator.Emit{h.keepLate}
	}
	op, err := windowAggregateKind(opts).New(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := op.Open(context.Background()); err != nil {
		op.Release()
		t.Fatal(err)
	}
	h.op = op
	t.Cleanup(func() {
		op.Release()
		h.mem.AssertSize(t, 0)
	})
	return h
}

func (h *windowHarness) emit(_ context.Context, b arrow.RecordBatch) error {
	defer b.Release()
	col := 0
	for row := range int(b.NumRows()) {
		var r windowResult
		col = 0
		if h.keyed {
			r.key = b.Column(0).ValueStr(row)
			col = 1
		}
		r.start = int64(b.Column(col).(*array.Timestamp).Value(row))
		r.end = int64(b.Column(col + 1).(*array.Timestamp).Value(row))
		var aggs []string
		for c := col + 2; c < int(b.NumCols()); c++ {
			aggs = append(aggs, b.Column(c).ValueStr(row))
		}
		r.aggs = strings.Join(aggs, " ")
		h.out = append(h.out, r)
	}
	return nil
}

// keepLate receives the late rows: unchanged input rows.
func (h *windowHarness) keepLate(_ context.Context, b arrow.RecordBatch) error {
	defer b.Release()
	if !b.Schema().Equal(windowTestInput) {
		h.t.Errorf("late rows have schema %s, want the input's %s", b.Schema(), windowTestInput)
	}
	for row := range int(b.NumRows()) {
		h.late = append(h.late, fmt.Sprintf("%s %d %s %s", b.Column(0).ValueStr(row),
			b.Column(1).(*array.Timestamp).Value(row), b.Column(2).ValueStr(row), b.Column(3).ValueStr(row)))
	}
	return nil
}

func (h *windowHarness) process(rows ...windowRow) {
	h.t.Helper()
	b := array.NewRecordBuilder(h.mem, windowTestInput)
	defer b.Release()
	for _, r := range rows {
		b.Field(0).(*array.StringBuilder).Append(r.k)
		b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(r.t))
		b.Field(2).(*array.Int64Builder).Append(r.v)
		b.Field(3).(*array.StringBuilder).Append(r.s)
	}
	batch := b.NewRecordBatch()
	defer batch.Release()
	if err := h.op.Process(context.Background(), 0, batch, h.emit); err != nil {
		h.t.Fatal(err)
	}
}

func (h *windowHarness) watermark(wm int64) {
	h.t.Helper()
	if _, err := h.op.OnWatermark(context.Background(), operator.Watermark(wm), h.emit); err != nil {
		h.t.Fatal(err)
	}
}

// take returns the rows emitted since the last take, sorted.
func (h *windowHarness) take() []string {
	var out []string
	for _, r := range h.out {
		out = append(out, r.String())
	}
	h.out = nil
	slices.Sort(out)
	return out
}

func expectRows(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("%s:\n got  %q\n want %q", what, got, want)
	}
}

// A tumbling window fires when the watermark reaches its end - 1, not
// before, once per key.
func TestWindowTumbleFiresOnWatermark(t *testing.T) {
	h := newWindowHarness(t, windowSpec(plan.Tumble, 1000, 0, 0, 0, true), state.KeyGroupRange{Start: 0, End: 127}, 1, 0, nil, "")
	h.process(windowRow{k: "a", t: 1000, v: 1, s: "x"}, windowRow{k: "b", t: 1500, v: 5, s: "y"}, windowRow{k: "a", t: 1999, v: 3, s: "z"},
		windowRow{k: "a", t: 2000, v: 7, s: "w"}, windowRow{k: "a", t: 1200, v: 2, s: "x"})
	h.watermark(1998)
	expectRows(t, "at 1998", h.take())
	h.watermark(1999)
	expectRows(t, "at 1999", h.take(),
		"a [1000,2000) 3 6 1 3 x z 2 2", "b [1000,2000) 1 5 5 5 y y 1 5")
	h.watermark(math.MaxInt64)
	expectRows(t, "at the end", h.take(), "a [2000,3000) 1 7 7 7 w w 1 7")
}

// Flink's lateness rules: a row for a fired window within the allowed
// lateness updates it and fires it again; after end - 1 + lateness it is
// dropped and counted.
func TestWindowLatenessRefiresThenDrops(t *testing.T) {
	h := newWindowHarness(t, windowSpec(plan.Tumble, 1000, 0, 0, 500, true), state.KeyGroupRange{Start: 0, End: 127}, 1, 0, nil, "")
	h.process(windowRow{k: "a", t: 100, v: 1, s: "x"})
	h.watermark(999)
	expectRows(t, "fired", h.take(), "a [0,1000) 1 1 1 1 x x 1 1")
	// Late but within lateness (cleanup at 999 + 500 = 1499): re-fired at once.
	h.process(windowRow{k: "a", t: 200, v: 2, s: "y"}, windowRow{k: "a", t: 1200, v: 9, s: "q"})
	expectRows(t, "re-fired", h.take(), "a [0,1000) 2 3 1 2 x y 2 1.5")
	h.watermark(1498)
	h.process(windowRow{k: "a", t: 300, v: 4, s: "z"})
	expectRows(t, "re-fired again", h.take(), "a [0,1000) 3 7 1 4 x z 3 2.3333333333333335")
	h.watermark(1499) // cleanup of [0, 1000)
	h.process(windowRow{k: "a", t: 400, v: 5, s: "u"}, windowRow{k: "b", t: 10, v: 5, s: "u"})
	expectRows(t, "dropped", h.take())
	if got := h.counters.LateRecordsDropped.Load(); got != 2 {
		t.Fatalf("numLateRecordsDropped = %d, want 2", got)
	}
	h.watermark(math.MaxInt64)
	expectRows(t, "at the end", h.take(), "a [1000,2000) 1 9 9 9 q q 1 9")
}

// Without lateness, a row of a fired hop window still counts in the later
// windows of its slice that have not fired; only a row too late for all
// of them is dropped.
func TestWindowHopLateRowGoesToUnfiredWindows(t *testing.T) {
	h := newWindowHarness(t, windowSpec(plan.Hop, 2000, 1000, 0, 0, false), state.KeyGroupRange{Start: 0, End: 127}, 1, 0, nil, "")
	h.process(windowRow{t: 500, v: 1, s: "a"})
	h.watermark(999)
	expectRows(t, "first window", h.take(), " [-1000,1000) 1 1 1 1 a a 1 1")
	h.process(windowRow{t: 600, v: 2, s: "b"}) // [-1000,1000) fired: only [0,2000) takes it
	h.watermark(1999)
	expectRows(t, "second window", h.take(), " [0,2000) 2 3 1 2 a b 2 1.5")
	h.process(windowRow{t: 700, v: 4, s: "c"}) // every window of its slice fired
	if got := h.counters.LateRecordsDropped.Load(); got != 1 {
		t.Fatalf("numLateRecordsDropped = %d, want 1", got)
	}
	h.watermark(math.MaxInt64)
	expectRows(t, "at the end", h.take())
}

// Session windows merge when a row bridges them; timers of merged windows
// go, the merged window fires once at its end - 1.
func TestWindowSessionsMerge(t *testing.T) {
	h := newWindowHarness(t, windowSpec(plan.Session, 0, 0, 100, 0, true), state.KeyGroupRange{Start: 0, End: 127}, 1, 0, nil, "")
	h.process(windowRow{k: "a", t: 0, v: 1, s: "p"}, windowRow{k: "a", t: 300, v: 2, s: "q"}, windowRow{k: "b", t: 0, v: 3, s: "r"})
	h.process(windowRow{k: "a", t: 50, v: 4, s: "s"}, windowRow{k: "a", t: 200, v: 5, s: "t"}) // [0,150); [200,300) touches [300,400)
	h.watermark(148)
	expectRows(t, "b's session", h.take(), "b [0,100) 1 3 3 3 r r 1 3")
	h.watermark(149)
	expectRows(t, "a's first session", h.take(), "a [0,150) 2 5 1 4 p s 2 2.5")
	h.process(windowRow{k: "a", t: 140, v: 6, s: "u"}) // [140,240) is late: [0,150) fired and is gone
	if got := h.counters.LateRecordsDropped.Load(); got != 0 {
		// [140, 240) merges with [200, 400), which is in flight: not late.
		t.Fatalf("numLateRecordsDropped = %d, want 0", got)
	}
	h.watermark(math.MaxInt64)
	expectRows(t, "at the end", h.take(), "a [140,400) 3 13 2 6 u q 3 4.333333333333333")
}

// randomRows makes rows of a few keys with event times growing with
// bounded disorder, no two at the same time (first and last are by event
// time; rows of equal times may come in any order).
func randomRows(rng *rand.Rand, n int, disorder int64) []windowRow {
	rows := make([]windowRow, n)
	seen := map[int64]bool{}
	for i := range rows {
		t := int64(i)*7 + rng.Int64N(disorder)
		for seen[t] {
			t++
		}
		seen[t] = true
		rows[i] = windowRow{k: fmt.Sprintf("k%d", rng.IntN(5)), t: t, v: rng.Int64N(100), s: fmt.Sprintf("s%d", rng.IntN(4))}
	}
	return rows
}

// referenceWindows computes every window's result from the assigner
// directly (sessions: by sorting each key's times), with no late row.
func referenceWindows(spec *plan.WindowAggregate, rows []windowRow) []string {
	a, err := plan.WindowAssigner(spec)
	if err != nil {
		panic(err)
	}
	type wk struct {
		key string
		w   window.Window
	}
	members := map[wk][]windowRow{}
	keyOf := func(r windowRow) string {
		if len(spec.Keys) == 0 {
			return ""
		}
		return r.k
	}
	if s, ok := a.(window.Session); ok {
		byKey := map[string][]windowRow{}
		for _, r := range rows {
			byKey[keyOf(r)] = append(byKey[keyOf(r)], r)
		}
		for key, rs := range byKey {
			sorted := slices.Clone(rs)
			slices.SortStableFunc(sorted, func(x, y windowRow) int { return int(x.t - y.t) })
			var cur window.Window
			var in []windowRow
			for i, r := range sorted {
				w := s.AssignWindows(r.t, nil)[0]
				if i > 0 && cur.Intersects(w) {
					cur = cur.Cover(w)
				} else {
					if i > 0 {
						members[wk{key, cur}] = in
					}
					cur, in = w, nil
				}
				in = append(in, r)
			}
			members[wk{key, cur}] = in
		}
	} else {
		for _, r := range rows {
			for _, w := range a.AssignWindows(r.t, nil) {
				members[wk{keyOf(r), w}] = append(members[wk{keyOf(r), w}], r)
			}
		}
	}
	var out []string
	for k, rs := range members {
		var sum, lo, hi int64 = 0, math.MaxInt64, math.MinInt64
		first, last := rs[0], rs[0]
		distinct := map[string]bool{}
		for _, r := range rs {
			sum += r.v
			lo, hi = min(lo, r.v), max(hi, r.v)
			if r.t < first.t {
				first = r
			}
			if r.t >= last.t {
				last = r
			}
			distinct[r.s] = true
		}
		mean := array.NewFloat64Builder(memory.DefaultAllocator)
		mean.Append(float64(sum) / float64(len(rs)))
		m := mean.NewFloat64Array()
		out = append(out, windowResult{key: k.key, start: k.w.Start, end: k.w.End,
			aggs: fmt.Sprintf("%d %d %d %d %s %s %d %s", len(rs), sum, lo, hi, first.s, last.s, len(distinct), m.ValueStr(0))}.String())
		m.Release()
		mean.Release()
	}
	slices.Sort(out)
	return out
}

// Every window kind, keyed and not, over rows with bounded disorder and a
// watermark trailing the greatest time by the disorder (no late row), in
// batches, with checkpoints that move keys out of memory: the result is
// the reference's.
func TestWindowKindsMatchReference(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec *plan.WindowAggregate
	}{
		{"tumble", windowSpec(plan.Tumble, 100, 0, 0, 0, true)},
		{"hop", windowSpec(plan.Hop, 100, 20, 0, 0, true)},
		{"cumulate", windowSpec(plan.Cumulate, 100, 25, 0, 0, true)},
		{"session", windowSpec(plan.Session, 0, 0, 30, 0, true)},
		{"tumble non-keyed", windowSpec(plan.Tumble, 100, 0, 0, 0, false)},
		{"hop non-keyed", windowSpec(plan.Hop, 100, 50, 0, 0, false)},
		{"cumulate non-keyed", windowSpec(plan.Cumulate, 60, 20, 0, 0, false)},
		{"session non-keyed", windowSpec(plan.Session, 0, 0, 3, 0, false)},
		{"hop with lateness", windowSpec(plan.Hop, 100, 20, 0, 50, true)},
		{"session with lateness", windowSpec(plan.Session, 0, 0, 30, 50, true)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(len(tc.name))))
			const disorder = 40
			rows := randomRows(rng, 600, disorder)
			h := newWindowHarness(t, tc.spec, state.KeyGroupRange{Start: 0, End: 127}, 1, 0, nil, "")
			storage := state.Storage{Root: t.TempDir()}
			if err := storage.Init(); err != nil {
				t.Fatal(err)
			}
			maxTs := int64(math.MinInt64)
			for i := 0; i < len(rows); i += 37 {
				batch := rows[i:min(i+37, len(rows))]
				h.process(batch...)
				for _, r := range batch {
					maxTs = max(maxTs, r.t)
				}
				h.watermark(maxTs - disorder - 1)
				if i%(37*4) == 0 {
					h.checkpoint(int64(i+1), storage.Root)
				}
			}
			h.watermark(math.MaxInt64)
			expectRows(t, tc.name, h.take(), referenceWindows(tc.spec, rows)...)
			if got := h.counters.LateRecordsDropped.Load(); got != 0 {
				t.Fatalf("dropped %d rows, none is late", got)
			}
		})
	}
}

func (h *windowHarness) checkpoint(id int64, root string) checkpoint.SubtaskState {
	h.t.Helper()
	st := checkpoint.SubtaskState{}
	if err := h.op.SnapshotState(context.Background(), checkpoint.Target{ID: id, Dir: root}, h.emit, &st); err != nil {
		h.t.Fatal(err)
	}
	if err := h.op.TakePersist()(context.Background(), &st); err != nil {
		h.t.Fatal(err)
	}
	return st
}

// A checkpoint taken mid-stream by one subtask, restored by two subtasks
// that split the key groups (and the other way round), gives the output of
// an uninterrupted run: windows, timers and lateness survive the rescale.
func TestWindowRestoreAtAnotherParallelism(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec *plan.WindowAggregate
	}{
		{"hop", windowSpec(plan.Hop, 100, 20, 0, 30, true)},
		{"session", windowSpec(plan.Session, 0, 0, 30, 30, true)},
		{"cumulate", windowSpec(plan.Cumulate, 100, 25, 0, 0, true)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, 7))
			const disorder = 40
			rows := randomRows(rng, 400, disorder)
			all := state.KeyGroupRange{Start: 0, End: 127}
			halves := []state.KeyGroupRange{{Start: 0, End: 63}, {Start: 64, End: 127}}
			storage := state.Storage{Root: t.TempDir()}
			if err := storage.Init(); err != nil {
				t.Fatal(err)
			}
			// First half of the input at parallelism 1, then a checkpoint.
			one := newWindowHarness(t, tc.spec, all, 1, 0, nil, "")
			maxTs := int64(math.MinInt64)
			feed := func(hs []*windowHarness, part []windowRow) {
				for i := 0; i < len(part); i += 25 {
					batch := part[i:min(i+25, len(part))]
					for _, h := range hs {
						var mine []windowRow
						for _, r := range batch {
							if kgOf(t, r.k) >= int(h.op.(*windowProc).keyed.keys.Start) && kgOf(t, r.k) <= int(h.op.(*windowProc).keyed.keys.End) {
								mine = append(mine, r)
							}
						}
						if len(mine) > 0 {
							h.process(mine...)
						}
					}
					for _, r := range batch {
						maxTs = max(maxTs, r.t)
					}
					for _, h := range hs {
						h.watermark(maxTs - disorder - 1)
					}
				}
			}
			feed([]*windowHarness{one}, rows[:200])
			st := one.checkpoint(1, storage.Root)
			st.Subtask = 0
			before := one.take()
			restored := &checkpoint.OperatorState{UID: "window", Parallelism: 1, Subtasks: []checkpoint.SubtaskState{st}}
			// The rest at parallelism 2.
			var two []*windowHarness
			for i, kgs := range halves {
				two = append(two, newWindowHarness(t, tc.spec, kgs, 2, i, restored, storage.Root))
			}
			feed(two, rows[200:])
			var got []string
			got = append(got, before...)
			for _, h := range two {
				h.watermark(math.MaxInt64)
				got = append(got, h.take()...)
			}
			slices.Sort(got)
			// The uninterrupted run.
			ref := newWindowHarness(t, tc.spec, all, 1, 0, nil, "")
			maxTs = math.MinInt64
			feed([]*windowHarness{ref}, rows)
			ref.watermark(math.MaxInt64)
			expectRows(t, "restored at parallelism 2", got, ref.take()...)
		})
	}
}

// kgOf is the key group of a string key, as the hash partitioner computes.
func kgOf(t *testing.T, key string) int {
	t.Helper()
	b := array.NewStringBuilder(memory.DefaultAllocator)
	defer b.Release()
	b.Append(key)
	col := b.NewArray()
	defer col.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.BinaryTypes.String}}, nil)
	rec := array.NewRecordBatch(schema, []arrow.Array{col}, 1)
	defer rec.Release()
	kgs, err := partitionKeyGroups(rec, []int{0}, 128)
	if err != nil {
		t.Fatal(err)
	}
	return int(kgs[0])
}

// The plan's errors: a time column that is not a timestamp.
func TestWindowRefusesBadPlans(t *testing.T) {
	spec := windowSpec(plan.Tumble, 100, 0, 0, 0, true)
	spec.TimeColumn = "v"
	kind := windowAggregateKind(Options{})
	op := &plan.Operator{Node: &plan.Node{Kind: plan.KindWindowAggregate, WindowAggregate: spec}}
	if _, err := kind.Schema(op, []*arrow.Schema{windowTestInput}); err == nil || !strings.Contains(err.Error(), `the time column "v" is int64, not a timestamp`) {
		t.Fatalf("non-timestamp time column: %v", err)
	}
}

// late_rows=KEEP, by hand from Flink's WindowOperator: a row whose every
// window is past its cleanup (end - 1 + lateness <= watermark) goes to the
// late-rows output unchanged and is not counted as dropped; a row late
// within the lateness re-fires its window and is not a late row; a hop
// row with a window not fired yet is not late.
func TestWindowKeepsLateRows(t *testing.T) {
	tumble := windowSpec(plan.Tumble, 1000, 0, 0, 500, true)
	tumble.LateRows = plan.KeepLateRows
	h := newWindowHarness(t, tumble, state.KeyGroupRange{Start: 0, End: 127}, 1, 0, nil, "")
	h.process(windowRow{k: "a", t: 100, v: 1, s: "x"})
	h.watermark(999)
	expectRows(t, "fired", h.take(), "a [0,1000) 1 1 1 1 x x 1 1")
	h.process(windowRow{k: "a", t: 200, v: 2, s: "y"}) // within lateness: re-fires
	expectRows(t, "re-fired", h.take(), "a [0,1000) 2 3 1 2 x y 2 1.5")
	h.watermark(1499) // cleanup of [0, 1000)
	h.process(windowRow{k: "a", t: 400, v: 5, s: "u"}, windowRow{k: "b", t: 1700, v: 6, s: "v"},
		windowRow{k: "b", t: 10, v: 7, s: "w"}, windowRow{k: "c", t: 999, v: 8, s: "z"})
	expectRows(t, "late rows", h.late, "a 400 5 u", "b 10 7 w", "c 999 8 z")
	h.late = nil
	h.process(windowRow{k: "a", t: 300, v: 9, s: "q"}) // a whole batch of late rows
	expectRows(t, "whole batch", h.late, "a 300 9 q")
	if got := h.counters.LateRecordsDropped.Load(); got != 0 {
		t.Fatalf("numLateRecordsDropped = %d, want 0: kept rows are not dropped", got)
	}
	h.watermark(math.MaxInt64)
	expectRows(t, "at the end", h.take(), "b [1000,2000) 1 6 6 6 v v 1 6")

	hop := windowSpec(plan.Hop, 2000, 1000, 0, 0, false)
	hop.LateRows = plan.KeepLateRows
	h = newWindowHarness(t, hop, state.KeyGroupRange{Start: 0, End: 127}, 1, 0, nil, "")
	h.process(windowRow{t: 500, v: 1, s: "a"})
	h.watermark(999)
	h.process(windowRow{t: 600, v: 2, s: "b"}) // [0,2000) has not fired: not late
	h.watermark(1999)
	h.process(windowRow{t: 700, v: 4, s: "c"}, windowRow{t: 1999, v: 5, s: "d"}) // 700: both windows fired
	expectRows(t, "hop late rows", h.late, " 700 4 c")
	h.watermark(math.MaxInt64)
	expectRows(t, "hop windows", h.take(), " [-1000,1000) 1 1 1 1 a a 1 1", " [0,2000) 2 3 1 2 a b 2 1.5",
		" [1000,3000) 1 5 5 5 d d 1 5")

	session := windowSpec(plan.Session, 0, 0, 100, 0, true)
	session.LateRows = plan.KeepLateRows
	h = newWindowHarness(t, session, state.KeyGroupRange{Start: 0, End: 127}, 1, 0, nil, "")
	h.process(windowRow{k: "a", t: 0, v: 1, s: "p"})
	h.watermark(150)
	// [40,140) ends at or before the watermark + 1: late; [60,160) fires
	// at 159, after 150: in time, though its row is older than the
	// watermark; [140,240) merges with it.
	h.process(windowRow{k: "a", t: 40, v: 2, s: "q"}, windowRow{k: "a", t: 60, v: 3, s: "r"})
	h.process(windowRow{k: "a", t: 140, v: 4, s: "s"})
	expectRows(t, "session late rows", h.late, "a 40 2 q")
	h.watermark(math.MaxInt64)
	expectRows(t, "sessions", h.take(), "a [0,100) 1 1 1 1 p p 1 1", "a [60,240) 2 7 3 4 r s 2 3.5")
}

// late_rows=KEEP with no edge reading the late rows drops and counts them.
func TestWindowLateRowsUnreadAreCounted(t *testing.T) {
	spec := windowSpec(plan.Tumble, 1000, 0, 0, 0, true)
	spec.LateRows = plan.KeepLateRows
	h := newWindowHarnessWith(t, spec, windowOutputSchema(true), Options{KeyedCacheGroups: 2}, 0, state.KeyGroupRange{Start: 0, End: 127}, 1, 0, nil, "")
	h.watermark(999)
	h.op.(*windowProc).lateRows = nil // as the task builds it when no edge reads them
	h.process(windowRow{k: "a", t: 100, v: 1, s: "x"})
	if got := h.counters.LateRecordsDropped.Load(); got != 1 || len(h.late) != 0 {
		t.Fatalf("numLateRecordsDropped = %d, late rows %q; want 1 and none", got, h.late)
	}
}

var partitionKeyGroups = partition.KeyGroups

// Sessions with allowed lateness, by hand from Flink's rules: a late row
// that bridges a fired session and a pending one merges them (one timer, at
// the merged end - 1); a late row inside a fired, not cleaned up session
// fires it again; after the cleanup a row is dropped and counted.
func TestWindowSessionLatenessMergesAndRefires(t *testing.T) {
	h := newWindowHarness(t, windowSpec(plan.Session, 0, 0, 100, 200, true), state.KeyGroupRange{Start: 0, End: 127}, 1, 0, nil, "")
	h.process(windowRow{k: "a", t: 0, v: 1, s: "p"})
	h.watermark(99)
	expectRows(t, "first session", h.take(), "a [0,100) 1 1 1 1 p p 1 1")
	h.process(windowRow{k: "a", t: 150, v: 2, s: "q"}) // [150, 250): pending
	h.process(windowRow{k: "a", t: 50, v: 3, s: "r"})  // bridges [0, 100) and [150, 250)
	expectRows(t, "merged, not due", h.take())
	h.watermark(248)
	expectRows(t, "not yet", h.take())
	h.watermark(249)
	expectRows(t, "merged session", h.take(), "a [0,250) 3 6 1 3 p q 3 2")
	h.process(windowRow{k: "a", t: 10, v: 4, s: "p"}) // inside the fired session
	expectRows(t, "re-fired", h.take(), "a [0,250) 4 10 1 4 p q 3 2.5")
	h.watermark(449) // cleanup at 249 + 200
	h.process(windowRow{k: "a", t: 20, v: 5, s: "z"})
	if got := h.counters.LateRecordsDropped.Load(); got != 1 {
		t.Fatalf("numLateRecordsDropped = %d, want 1", got)
	}
	h.watermark(math.MaxInt64)
	expectRows(t, "at the end", h.take())
}

// A null event time fails the batch, naming the column; times of other
// units are floored to milliseconds, before the epoch too.
func TestWindowTimeColumn(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	in := arrow.NewSchema([]arrow.Field{{Name: "t", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true}}, nil)
	spec := &plan.WindowAggregate{TimeColumn: "t", Kind: plan.Tumble, SizeMs: 10,
		Aggregates: []*plan.Aggregate{{Function: "count", Name: "n"}}}
	ts := &arrow.TimestampType{Unit: arrow.Millisecond}
	out := arrow.NewSchema([]arrow.Field{{Name: "window_start", Type: ts}, {Name: "window_end", Type: ts}, {Name: "n", Type: arrow.PrimitiveTypes.Int64}}, nil)
	c := &operator.Context{
		Op: &plan.Operator{Name: "window", UID: "window", Kind: plan.KindWindowAggregate,
			Node: &plan.Node{Kind: plan.KindWindowAggregate, WindowAggregate: spec}},
		Parallelism: 1, MaxParallelism: 128, In: []*arrow.Schema{in}, Out: out, Allocator: mem, Counters: &operator.Counters{},
		Keyed: &operator.KeyedContext{KeyGroups: state.KeyGroupRange{Start: 0, End: 127}, StateDir: t.TempDir()},
	}
	op, err := windowAggregateKind(Options{KeyedCacheGroups: 10}).New(c)
	if err != nil {
		t.Fatal(err)
	}
	defer op.Release()
	var got []string
	emit := func(_ context.Context, b arrow.RecordBatch) error {
		defer b.Release()
		for i := range int(b.NumRows()) {
			got = append(got, fmt.Sprintf("[%s,%s) %s", b.Column(0).ValueStr(i), b.Column(1).ValueStr(i), b.Column(2).ValueStr(i)))
		}
		return nil
	}
	batch := func(vals []int64, valid []bool) arrow.RecordBatch {
		b := array.NewRecordBuilder(mem, in)
		defer b.Release()
		for i, v := range vals {
			if valid != nil && !valid[i] {
				b.Field(0).AppendNull()
			} else {
				b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(v))
			}
		}
		return b.NewRecordBatch()
	}
	// -1 µs is in the millisecond -1, so in the window [-10, 0).
	b := batch([]int64{-1, 0, 9_999, 10_000}, nil)
	err = op.Process(context.Background(), 0, b, emit)
	b.Release()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := op.OnWatermark(context.Background(), operator.Watermark(math.MaxInt64), emit); err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	want := []string{"[1969-12-31T23:59:59.99,1970-01-01T00:00:00) 1", "[1970-01-01T00:00:00,1970-01-01T00:00:00.01) 2", "[1970-01-01T00:00:00.01,1970-01-01T00:00:00.02) 1"}
	if !slices.Equal(got, want) {
		t.Fatalf("windows %q, want %q", got, want)
	}
	b = batch([]int64{1, 2}, []bool{true, false})
	err = op.Process(context.Background(), 0, b, emit)
	b.Release()
	if err == nil || !strings.Contains(err.Error(), `the time column "t" is null`) {
		t.Fatalf("a null time: %v", err)
	}
}
