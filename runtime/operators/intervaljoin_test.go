package operators

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/runtime/checkpoint"
	"github.com/flinkgo/flinkgo/runtime/operator"
	"github.com/flinkgo/flinkgo/runtime/partition"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/state"
)

// joinRow is one generated input row: id, key (nil: null), time in ms (nil: null).
type joinRow struct {
	id  int64
	key *int64
	ts  *int64
}

func joinSchema(prefix string, unit arrow.TimeUnit) *arrow.Schema {
	return arrow.NewSchema([]arrow.Field{
		{Name: prefix + "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "t", Type: &arrow.TimestampType{Unit: unit}, Nullable: true},
	}, nil)
}

func joinBatch(mem memory.Allocator, schema *arrow.Schema, rows []joinRow) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	unit := schema.Field(2).Type.(*arrow.TimestampType).Unit
	for _, r := range rows {
		b.Field(0).(*array.Int64Builder).Append(r.id)
		if r.key == nil {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.Int64Builder).Append(*r.key)
		}
		if r.ts == nil {
			b.Field(2).AppendNull()
		} else {
			v := *r.ts * int64(arrow.Millisecond.Multiplier()) / int64(unit.Multiplier())
			if unit == arrow.Second {
				v = *r.ts / 1000
			}
			b.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(v))
		}
	}
	return b.NewRecordBatch()
}

// referenceJoin is the join by its definition, over all rows at once.
func referenceJoin(left, right []joinRow, lower, upper int64, how plan.JoinType) []string {
	var out []string
	rightMatched := make([]bool, len(right))
	for _, l := range left {
		matched := false
		for i, r := range right {
			if l.key == nil || r.key == nil || l.ts == nil || r.ts == nil || *l.key != *r.key {
				continue
			}
			if *l.ts+lower <= *r.ts && *r.ts <= *l.ts+upper {
				out = append(out, fmt.Sprintf("%d|%d", l.id, r.id))
				matched, rightMatched[i] = true, true
			}
		}
		if !matched && (how == plan.LeftJoin || how == plan.FullJoin) {
			out = append(out, fmt.Sprintf("%d|-", l.id))
		}
	}
	for i, r := range right {
		if !rightMatched[i] && (how == plan.RightJoin || how == plan.FullJoin) {
			out = append(out, fmt.Sprintf("-|%d", r.id))
		}
	}
	slices.Sort(out)
	return out
}

// newTestJoin builds an interval join; with late emits (left, right) it has
// late_rows=KEEP and sends its late rows there.
func newTestJoin(t testing.TB, mem memory.Allocator, lower, upper int64, how plan.JoinType, units [2]arrow.TimeUnit, late ...operator.Emit) operator.Operator {
	t.Helper()
	in := []*arrow.Schema{joinSchema("l", units[0]), joinSchema("r", units[1])}
	node := &plan.Node{Kind: plan.KindIntervalJoin, IntervalJoin: &plan.IntervalJoin{
		LeftKeys: []string{"k"}, RightKeys: []string{"k"}, LeftTime: "t", RightTime: "t",
		LowerNs: lower * 1e6, UpperNs: upper * 1e6, How: how,
	}}
	if len(late) > 0 {
		node.IntervalJoin.LateRows = plan.KeepLateRows
	}
	op := &plan.Operator{Name: "join", UID: "join", Kind: plan.KindIntervalJoin, Node: node}
	out, err := intervalJoinSchema(op, in)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(out.Fields()[3].Name, out.Fields()[4].Name, out.Fields()[5].Name); got != "ridk_rightt_right" {
		t.Fatalf("right columns named %s", got)
	}
	j, err := intervalJoinKind(Options{}).New(&operator.Context{Op: op, Parallelism: 1, MaxParallelism: 128, In: in, Out: out,
		Allocator: mem, Logger: slog.New(slog.DiscardHandler), LateRows: late,
		Keyed: &operator.KeyedContext{KeyGroups: state.KeyGroupRange{Start: 0, End: 127}, StateDir: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func collectJoined(got *[]string) operator.Emit {
	return func(_ context.Context, b arrow.RecordBatch) error {
		defer b.Release()
		l, r := b.Column(0).(*array.Int64), b.Column(3).(*array.Int64)
		for i := range int(b.NumRows()) {
			ls, rs := "-", "-"
			if l.IsValid(i) {
				ls = fmt.Sprint(l.Value(i))
			}
			if r.IsValid(i) {
				rs = fmt.Sprint(r.Value(i))
			}
			*got = append(*got, ls+"|"+rs)
		}
		return nil
	}
}

// Random inputs with bounded disorder, fed in small batches alternating
// sides with watermarks that trail the largest time by the disorder bound
// (so no row is late): the output equals the join by definition, for every
// join type, bounds on either side of zero and mixed time units.
func TestIntervalJoinMatchesTheDefinition(t *testing.T) {
	for _, tc := range []struct {
		name         string
		lower, upper int64
		units        [2]arrow.TimeUnit
	}{
		{"around zero", -30, 50, [2]arrow.TimeUnit{arrow.Millisecond, arrow.Millisecond}},
		{"right after left", 10, 80, [2]arrow.TimeUnit{arrow.Microsecond, arrow.Second}},
		{"right before left", -90, -20, [2]arrow.TimeUnit{arrow.Nanosecond, arrow.Millisecond}},
		{"equal times only", 0, 0, [2]arrow.TimeUnit{arrow.Millisecond, arrow.Millisecond}},
	} {
		for _, how := range []plan.JoinType{plan.InnerJoin, plan.LeftJoin, plan.RightJoin, plan.FullJoin} {
			t.Run(tc.name+"/"+how.String(), func(t *testing.T) {
				mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
				defer mem.AssertSize(t, 0)
				ctx := compute.WithAllocator(context.Background(), mem)
				rng := rand.New(rand.NewPCG(7, uint64(how)))
				const disorder = 100
				gen := func(n int, idBase int64, secs bool) []joinRow {
					rows := make([]joinRow, n)
					for i := range rows {
						base := int64(i) * 20
						ts := base + rng.Int64N(disorder) - disorder/2 + 1_700_000_000_000
						if secs {
							ts = ts / 1000 * 1000 // the input holds whole seconds
						}
						k := rng.Int64N(4)
						rows[i] = joinRow{id: idBase + int64(i), key: &k, ts: &ts}
						if rng.IntN(15) == 0 {
							rows[i].key = nil
						}
						if rng.IntN(25) == 0 {
							rows[i].ts = nil
						}
					}
					return rows
				}
				left := gen(300, 0, tc.units[0] == arrow.Second)
				right := gen(300, 1000, tc.units[1] == arrow.Second)
				j := newTestJoin(t, mem, tc.lower, tc.upper, how, tc.units)
				defer j.Release()
				var got []string
				emit := collectJoined(&got)
				schemas := []*arrow.Schema{joinSchema("l", tc.units[0]), joinSchema("r", tc.units[1])}
				maxSeen := int64(-1 << 62)
				for at := 0; at < 300; at += 7 {
					for s, rows := range [][]joinRow{left, right} {
						part := rows[at:min(at+7, 300)]
						b := joinBatch(mem, schemas[s], part)
						if err := j.Process(ctx, s, b, emit); err != nil {
							t.Fatal(err)
						}
						b.Release()
						for _, r := range part {
							if r.ts != nil {
								maxSeen = max(maxSeen, *r.ts)
							}
						}
					}
					// Bounded out-of-orderness: nothing later than this follows.
					wm := maxSeen - 1200 // whole seconds: up to 999 ms below
					if _, err := j.OnWatermark(ctx, operator.Watermark(wm), emit); err != nil {
						t.Fatal(err)
					}
				}
				if _, err := j.OnWatermark(ctx, operator.Watermark(1<<62), emit); err != nil {
					t.Fatal(err)
				}
				if err := j.Finish(ctx, emit); err != nil {
					t.Fatal(err)
				}
				slices.Sort(got)
				want := referenceJoin(left, right, tc.lower, tc.upper, how)
				if !slices.Equal(got, want) {
					t.Fatalf("got %d rows, want %d\n got %v\nwant %v", len(got), len(want), head(got), head(want))
				}
				if j.(*intervalJoin).late != 0 {
					t.Errorf("%d rows counted late", j.(*intervalJoin).late)
				}
			})
		}
	}
}

func head(s []string) []string { return s[:min(len(s), 20)] }

// The watermark expires rows when no row of the other side can match them
// any more: an unmatched outer row comes out then, not at the end; a row
// behind the watermark is dropped and counted, as Flink does.
func TestIntervalJoinExpiresOnWatermarks(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ctx := compute.WithAllocator(context.Background(), mem)
	units := [2]arrow.TimeUnit{arrow.Millisecond, arrow.Millisecond}
	j := newTestJoin(t, mem, -10, 20, plan.FullJoin, units)
	defer j.Release()
	var got []string
	emit := collectJoined(&got)
	k, t100, t105, t300 := int64(1), int64(100), int64(105), int64(300)
	feed := func(side int, rows ...joinRow) {
		b := joinBatch(mem, joinSchema([]string{"l", "r"}[side], arrow.Millisecond), rows)
		defer b.Release()
		if err := j.Process(ctx, side, b, emit); err != nil {
			t.Fatal(err)
		}
	}
	watermark := func(wm int64) {
		out, err := j.OnWatermark(ctx, operator.Watermark(wm), emit)
		if err != nil {
			t.Fatal(err)
		}
		if out != operator.Watermark(wm-20) { // held back by max(upper, -lower) = 20 ms
			t.Fatalf("watermark %d forwarded as %d", wm, out)
		}
	}
	feed(0, joinRow{id: 1, key: &k, ts: &t100}, joinRow{id: 2, key: nil, ts: &t100})
	if !slices.Equal(got, []string{"2|-"}) {
		t.Fatalf("a null key on an outer side comes out at once: %v", got)
	}
	feed(1, joinRow{id: 11, key: &k, ts: &t105})
	watermark(119) // left 1 may still match a right row at 120
	if !slices.Equal(got, []string{"2|-", "1|11"}) {
		t.Fatalf("before expiry: %v", got)
	}
	watermark(120) // left 1 (matched) and right 11 (matched, cleanup at 115) go
	feed(0, joinRow{id: 3, key: &k, ts: &t300})
	watermark(319)
	if len(got) != 2 {
		t.Fatalf("left 3 may still match until 320: %v", got)
	}
	watermark(320)
	if !slices.Equal(got, []string{"2|-", "1|11", "3|-"}) {
		t.Fatalf("left 3 comes out padded when the watermark passes 320: %v", got)
	}
	feed(1, joinRow{id: 12, key: &k, ts: &t105}) // behind the watermark
	if err := j.Finish(ctx, emit); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || j.(*intervalJoin).late != 1 {
		t.Fatalf("late row: output %v, late %d", got, j.(*intervalJoin).late)
	}
}

// late_rows=KEEP, as Flink's sideOutputLeftLateData and
// sideOutputRightLateData: a row whose time is behind the watermark goes,
// unchanged, to its side's late-rows output, and matches nothing; a row at
// the watermark is not late. A side whose late rows nobody reads drops
// and counts them.
func TestIntervalJoinKeepsLateRows(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ctx := compute.WithAllocator(context.Background(), mem)
	var late [2][]string
	keep := func(side int, want *arrow.Schema) operator.Emit {
		return func(_ context.Context, b arrow.RecordBatch) error {
			defer b.Release()
			if !b.Schema().Equal(want) {
				t.Errorf("late rows of side %d have schema %s, want the input's %s", side, b.Schema(), want)
			}
			for i := range int(b.NumRows()) {
				late[side] = append(late[side], fmt.Sprintf("%d@%d", b.Column(0).(*array.Int64).Value(i), b.Column(2).(*array.Timestamp).Value(i)))
			}
			return nil
		}
	}
	units := [2]arrow.TimeUnit{arrow.Millisecond, arrow.Second}
	j := newTestJoin(t, mem, -10, 20, plan.InnerJoin, units, keep(0, joinSchema("l", arrow.Millisecond)), keep(1, joinSchema("r", arrow.Second)))
	defer j.Release()
	var got []string
	emit := collectJoined(&got)
	feed := func(side int, rows ...joinRow) {
		b := joinBatch(mem, joinSchema([]string{"l", "r"}[side], units[side]), rows)
		defer b.Release()
		if err := j.Process(ctx, side, b, emit); err != nil {
			t.Fatal(err)
		}
	}
	k := int64(1)
	at := func(ms int64) *int64 { return &ms }
	feed(0, joinRow{id: 1, key: &k, ts: at(100)}) // no watermark yet: nothing is late
	if _, err := j.OnWatermark(ctx, 5000, emit); err != nil {
		t.Fatal(err)
	}
	feed(0, joinRow{id: 2, key: &k, ts: at(4999)}, joinRow{id: 3, key: &k, ts: at(5000)}, joinRow{id: 4, key: &k, ts: at(10)})
	feed(1, joinRow{id: 11, key: &k, ts: at(4000)}, joinRow{id: 12, key: &k, ts: at(5000)}) // right times in s
	if !slices.Equal(late[0], []string{"2@4999", "4@10"}) || !slices.Equal(late[1], []string{"11@4"}) {
		t.Fatalf("late rows: left %v, right %v", late[0], late[1])
	}
	if !slices.Equal(got, []string{"3|12"}) {
		t.Fatalf("joined %v, want only the rows at the watermark", got)
	}
	if n := j.(*intervalJoin).late; n != 0 {
		t.Fatalf("%d rows counted as dropped, want 0: they were kept", n)
	}

	// Only the left side's late rows are read.
	late = [2][]string{}
	j2 := newTestJoin(t, mem, 0, 0, plan.InnerJoin, [2]arrow.TimeUnit{arrow.Millisecond, arrow.Millisecond}, keep(0, joinSchema("l", arrow.Millisecond)))
	defer j2.Release()
	if _, err := j2.OnWatermark(ctx, 100, emit); err != nil {
		t.Fatal(err)
	}
	for side := range 2 {
		b := joinBatch(mem, joinSchema([]string{"l", "r"}[side], arrow.Millisecond), []joinRow{{id: int64(side), key: &k, ts: at(1)}})
		if err := j2.Process(ctx, side, b, emit); err != nil {
			t.Fatal(err)
		}
		b.Release()
	}
	if !slices.Equal(late[0], []string{"0@1"}) || len(late[1]) != 0 || j2.(*intervalJoin).late != 1 {
		t.Fatalf("left kept %v, right kept %v, dropped %d; want the left row kept, the right one dropped", late[0], late[1], j2.(*intervalJoin).late)
	}
}

func TestIntervalJoinErrors(t *testing.T) {
	in := []*arrow.Schema{joinSchema("l", arrow.Millisecond), arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.BinaryTypes.String}, {Name: "t", Type: arrow.PrimitiveTypes.Int64},
	}, nil)}
	for _, tc := range []struct {
		name string
		spec *plan.IntervalJoin
		want string
	}{
		{"key types", &plan.IntervalJoin{LeftKeys: []string{"k"}, RightKeys: []string{"k"}, LeftTime: "t", RightTime: "k"}, "right time column \"k\" is utf8, not a timestamp"},
		{"unknown key", &plan.IntervalJoin{LeftKeys: []string{"kk"}, RightKeys: []string{"k"}, LeftTime: "t", RightTime: "t"}, "left key \"kk\" is not a column"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			op := &plan.Operator{Name: "join", Kind: plan.KindIntervalJoin, Node: &plan.Node{Kind: plan.KindIntervalJoin, IntervalJoin: tc.spec}}
			_, err := configureIntervalJoin(&operator.Context{Op: op, In: in})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// A checkpoint in the middle, restored into two subtasks that split the key
// groups (a rescale from 1 to 2): the rows buffered before the checkpoint
// still match, and outer rows still come out, once, in the subtask that
// owns their key; the output before plus after equals the definition's.
func TestIntervalJoinCheckpointRestoreRescale(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ctx := compute.WithAllocator(context.Background(), mem)
	units := [2]arrow.TimeUnit{arrow.Millisecond, arrow.Microsecond}
	schemas := []*arrow.Schema{joinSchema("l", units[0]), joinSchema("r", units[1])}
	rng := rand.New(rand.NewPCG(3, 4))
	gen := func(n int, idBase int64) []joinRow {
		rows := make([]joinRow, n)
		for i := range rows {
			ts := int64(i)*20 + rng.Int64N(100) - 50 + 1_700_000_000_000
			k := rng.Int64N(9)
			rows[i] = joinRow{id: idBase + int64(i), key: &k, ts: &ts}
			if rng.IntN(20) == 0 {
				rows[i].key = nil
			}
		}
		return rows
	}
	left, right := gen(200, 0), gen(200, 1000)
	const lower, upper = -40, 60
	how := plan.FullJoin
	in := []*arrow.Schema{schemas[0], schemas[1]}
	node := &plan.Node{Kind: plan.KindIntervalJoin, IntervalJoin: &plan.IntervalJoin{
		LeftKeys: []string{"k"}, RightKeys: []string{"k"}, LeftTime: "t", RightTime: "t",
		LowerNs: lower * 1e6, UpperNs: upper * 1e6, How: how,
	}}
	op := &plan.Operator{Name: "join", UID: "join", Kind: plan.KindIntervalJoin, Node: node}
	out, err := intervalJoinSchema(op, in)
	if err != nil {
		t.Fatal(err)
	}
	build := func(groups state.KeyGroupRange, subtask int, restored *checkpoint.OperatorState, base string) operator.Operator {
		j, err := intervalJoinKind(Options{}).New(&operator.Context{Op: op, Subtask: subtask, Parallelism: 2, MaxParallelism: 128,
			In: in, Out: out, Allocator: mem, Logger: slog.New(slog.DiscardHandler), Restored: restored, RestoreBase: base,
			Keyed: &operator.KeyedContext{KeyGroups: groups, StateDir: t.TempDir()}})
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	var got []string
	emit := collectJoined(&got)
	maxSeen := int64(-1 << 62)
	// feed sends rows [from, to) of both sides, each row to the operator
	// owning its key group, then a watermark to all.
	feed := func(ops []operator.Operator, ranges []state.KeyGroupRange, from, to int) {
		for at := from; at < to; at += 9 {
			for s, rows := range [][]joinRow{left, right} {
				b := joinBatch(mem, schemas[s], rows[at:min(at+9, to)])
				groups, err := partition.KeyGroups(b, []int{1}, 128)
				if err != nil {
					t.Fatal(err)
				}
				for i, o := range ops {
					var keep []int64
					for row, g := range groups {
						owns := ranges[i].Start <= int(g) && int(g) <= ranges[i].End
						if b.Column(1).IsNull(row) {
							owns = i == 0 // a null key is no key group's: any subtask
						}
						if owns {
							keep = append(keep, int64(row))
						}
					}
					part, err := takeRows(ctx, b, keep)
					if err != nil {
						t.Fatal(err)
					}
					if err := o.Process(ctx, s, part, emit); err != nil {
						t.Fatal(err)
					}
					part.Release()
				}
				b.Release()
				for _, r := range rows[at:min(at+9, to)] {
					maxSeen = max(maxSeen, *r.ts)
				}
			}
			for _, o := range ops {
				if _, err := o.OnWatermark(ctx, operator.Watermark(maxSeen-200), emit); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	all := state.KeyGroupRange{Start: 0, End: 127}
	first := build(all, 0, nil, "")
	feed([]operator.Operator{first}, []state.KeyGroupRange{all}, 0, 100)
	storage := state.Storage{Root: t.TempDir()}
	if err := storage.Init(); err != nil {
		t.Fatal(err)
	}
	if err := first.SnapshotState(ctx, checkpoint.Target{ID: 1, Dir: storage.Root}, emit, &checkpoint.SubtaskState{}); err != nil {
		t.Fatal(err)
	}
	st := checkpoint.SubtaskState{Subtask: 0}
	if err := first.TakePersist()(ctx, &st); err != nil || st.Keyed == nil {
		t.Fatalf("persist: %v, state %s", err, st.Keyed)
	}
	if len(first.(*intervalJoin).buffers) == 0 {
		t.Fatal("nothing was buffered at the checkpoint: the test proves nothing")
	}
	first.Release() // the job fails after the checkpoint and restarts at parallelism 2
	restored := &checkpoint.OperatorState{UID: "join", Parallelism: 1, Subtasks: []checkpoint.SubtaskState{st}}
	ranges := []state.KeyGroupRange{{Start: 0, End: 63}, {Start: 64, End: 127}}
	second := []operator.Operator{build(ranges[0], 0, restored, storage.Root), build(ranges[1], 1, restored, storage.Root)}
	defer second[0].Release()
	defer second[1].Release()
	feed(second, ranges, 100, 200)
	for _, o := range second {
		if _, err := o.OnWatermark(ctx, operator.Watermark(1<<62), emit); err != nil {
			t.Fatal(err)
		}
		if err := o.Finish(ctx, emit); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(got)
	want := referenceJoin(left, right, lower, upper, how)
	if !slices.Equal(got, want) {
		t.Fatalf("got %d rows, want %d\n extra %v\nmissing %v", len(got), len(want), minus(got, want), minus(want, got))
	}
}

// minus is a's rows that b lacks, counting repeats.
func minus(a, b []string) []string {
	left := map[string]int{}
	for _, s := range b {
		left[s]++
	}
	var out []string
	for _, s := range a {
		if left[s] > 0 {
			left[s]--
			continue
		}
		out = append(out, s)
	}
	return out
}

// BenchmarkIntervalJoin measures one subtask joining two streams of
// 1000-row batches (1000 keys, one row per key and ms per side, bounds
// -5..+5 ms, a watermark after every pair of batches, so about 10 rows per
// key stay buffered); rows/s counts the rows of both inputs, and includes
// building the input batches.
func BenchmarkIntervalJoin(b *testing.B) {
	mem := memory.NewGoAllocator()
	ctx := compute.WithAllocator(context.Background(), mem)
	units := [2]arrow.TimeUnit{arrow.Millisecond, arrow.Millisecond}
	j := newTestJoin(b, mem, -5, 5, plan.InnerJoin, units)
	defer j.Release()
	schemas := []*arrow.Schema{joinSchema("l", units[0]), joinSchema("r", units[1])}
	const rows = 1000
	var out int64
	emit := func(_ context.Context, rb arrow.RecordBatch) error {
		out += rb.NumRows()
		rb.Release()
		return nil
	}
	keys, times := make([]int64, rows), make([]int64, rows)
	rs := make([]joinRow, rows)
	for i := range rs {
		keys[i] = int64(i)
		rs[i] = joinRow{id: int64(i), key: &keys[i], ts: &times[i]}
	}
	for i := range b.N {
		for k := range times {
			times[k] = int64(i) // every key once per ms
		}
		for s := range 2 {
			batch := joinBatch(mem, schemas[s], rs)
			if err := j.Process(ctx, s, batch, emit); err != nil {
				b.Fatal(err)
			}
			batch.Release()
		}
		if _, err := j.OnWatermark(ctx, operator.Watermark(int64(i)-5), emit); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(2*rows*b.N)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(out)/float64(b.N), "out/op")
}
