package operators

import (
	"context"
	"fmt"
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
	"github.com/flinkgo/flinkgo/runtime/rowkind"
	"github.com/flinkgo/flinkgo/state"
)

// distinctAgg builds key_by(k).agg(count_distinct(v), count()) on a real
// Pebble backend with a cache of one group (checkpoints move groups out of
// memory); changelog: the input carries row kinds.
func distinctAgg(t testing.TB, mem memory.Allocator, changelog bool, ttlMs int64) (operator.Operator, *arrow.Schema, error) {
	t.Helper()
	return distinctAggAt(t, mem, changelog, ttlMs, state.KeyGroupRange{Start: 0, End: 127}, 0, 1, nil, "")
}

// distinctAggAt is distinctAgg as subtask of parallelism, owning groups,
// restored from restored (nil: a fresh start).
func distinctAggAt(t testing.TB, mem memory.Allocator, changelog bool, ttlMs int64, groups state.KeyGroupRange, subtask, parallelism int, restored *checkpoint.OperatorState, base string) (operator.Operator, *arrow.Schema, error) {
	t.Helper()
	in := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil)
	out := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "d", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "n", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil)
	mode := rowkind.Retract // the output: updates with -U/+U
	if changelog {
		in = rowkind.WithColumn(in)
	}
	out = rowkind.WithColumn(out)
	c := &operator.Context{
		Op: &plan.Operator{Name: "agg", UID: "agg", Kind: plan.KindKeyedAggregate, EmitUpdates: true, Changelog: mode,
			Node: &plan.Node{Kind: plan.KindKeyedAggregate, KeyedAggregate: &plan.KeyedAggregate{
				Keys: []string{"k"}, StateTTLMs: ttlMs, Aggregates: []*plan.Aggregate{
					{Function: "count_distinct", Column: "v", Name: "d"}, {Function: "count", Name: "n"},
				}}}},
		Subtask: subtask, Parallelism: parallelism, MaxParallelism: 128, In: []*arrow.Schema{in}, Out: out, Allocator: mem,
		Restored: restored, RestoreBase: base,
		Keyed: &operator.KeyedContext{KeyGroups: groups, StateDir: t.TempDir()},
	}
	op, err := keyedAggregateKind(Options{KeyedCacheGroups: 1, UpdateInterval: 1 << 62}).New(c)
	return op, in, err
}

// appendRows builds a batch of "key value" rows ("a -" is a null value).
func appendRows(mem memory.Allocator, schema *arrow.Schema, rows ...string) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for _, r := range rows {
		k, v, _ := strings.Cut(r, " ")
		b.Field(0).(*array.StringBuilder).Append(k)
		if v == "-" {
			b.Field(1).AppendNull()
		} else {
			if err := b.Field(1).AppendValueFromString(v); err != nil {
				panic(err)
			}
		}
	}
	return b.NewRecordBatch()
}

func checkpointOp(t *testing.T, op operator.Operator, out *printed) {
	t.Helper()
	ctx := context.Background()
	storage := state.Storage{Root: t.TempDir()}
	if err := storage.Init(); err != nil {
		t.Fatal(err)
	}
	if err := op.SnapshotState(ctx, checkpoint.Target{ID: 1, Dir: storage.Root}, out.emit, &checkpoint.SubtaskState{}); err != nil {
		t.Fatal(err)
	}
	if err := op.TakePersist()(ctx, &checkpoint.SubtaskState{}); err != nil {
		t.Fatal(err)
	}
}

// count_distinct of an append-only input: duplicates and nulls do not
// count, across a checkpoint that moved the groups out of memory.
func TestKeyedCountDistinctAppendOnly(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	op, in, err := distinctAgg(t, mem, false, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer op.Release()
	var out printed
	step := func(rows ...string) []string {
		t.Helper()
		b := appendRows(mem, in, rows...)
		defer b.Release()
		if err := op.Process(ctx, 0, b, out.emit); err != nil {
			t.Fatal(err)
		}
		if err := op.OnTimer(ctx, out.emit); err != nil {
			t.Fatal(err)
		}
		return out.take()
	}
	check := func(got []string, want ...string) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Errorf("emitted\n  %v\nwant\n  %v", got, want)
		}
	}
	check(step("a 1", "a 1", "a 2", "b -", "b 5"), "+I[a, 2, 3]", "+I[b, 1, 2]")
	checkpointOp(t, op, &out)
	check(step("a 2", "b 6", "a 3"), "-U[a, 2, 3]", "+U[a, 3, 5]", "-U[b, 1, 2]", "+U[b, 2, 3]")
	checkpointOp(t, op, &out)
	check(step("a 1", "a 3", "b -"), "-U[a, 3, 5]", "+U[a, 3, 7]", "-U[b, 2, 3]", "+U[b, 2, 4]")
}

// Over a retract stream a value leaves the set when its last row is
// retracted; a duplicate keeps it; a key with no rows left is deleted.
func TestKeyedCountDistinctRetracts(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	op, in, err := distinctAgg(t, mem, true, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer op.Release()
	var out printed
	step := func(rows ...string) []string {
		t.Helper()
		b := changes(mem, in, rows...)
		defer b.Release()
		if err := op.Process(ctx, 0, b, out.emit); err != nil {
			t.Fatal(err)
		}
		if err := op.OnTimer(ctx, out.emit); err != nil {
			t.Fatal(err)
		}
		return out.take()
	}
	check := func(got []string, want ...string) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Errorf("emitted\n  %v\nwant\n  %v", got, want)
		}
	}
	check(step("+I a 5", "+I a 5", "+I a 7", "+I b 1"), "+I[a, 2, 3]", "+I[b, 1, 1]")
	checkpointOp(t, op, &out)
	// One of two 5s goes: 5 stays.
	check(step("-U a 5", "+U a 8"), "-U[a, 2, 3]", "+U[a, 3, 3]")
	// The last 5 goes.
	check(step("-D a 5"), "-U[a, 3, 3]", "+U[a, 2, 2]")
	checkpointOp(t, op, &out)
	// A value in and out in one batch changes nothing.
	check(step("+I b 4", "-D b 4"))
	check(step("-D a 7", "-D a 8", "-D b 1"), "-D[a, 2, 2]", "-D[b, 1, 1]")
	// The key comes back from an empty set.
	check(step("+I a 7"), "+I[a, 1, 1]")

	b := changes(mem, in, "-D a 42")
	defer b.Release()
	if err := op.Process(ctx, 0, b, out.emit); err == nil || !strings.Contains(err.Error(), "aggregate d: retracts a value the key never had") {
		t.Errorf("retracting a value never seen: %v", err)
	}
}

func TestKeyedCountDistinctRefusesAStateTTL(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	op, _, err := distinctAgg(t, mem, false, 60_000)
	if err == nil {
		op.Release()
	}
	if err == nil || !strings.Contains(err.Error(), "count_distinct cannot be combined with a state TTL") {
		t.Fatalf("error %v", err)
	}
}

// The value sets are keyed state: a job checkpointed at parallelism 1 and
// restored at 2 (each subtask half the key groups) counts the values seen
// before the checkpoint once, not again.
func TestKeyedCountDistinctRestoresAtAnotherParallelism(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	var rows []string
	for i := range 400 {
		rows = append(rows, fmt.Sprintf("k%d %d", i%13, (i*7)%31))
	}
	var out printed
	feed := func(ops []operator.Operator, ranges []state.KeyGroupRange, in *arrow.Schema, rows []string) {
		t.Helper()
		b := appendRows(mem, in, rows...)
		defer b.Release()
		groups, err := partition.KeyGroups(b, []int{0}, 128)
		if err != nil {
			t.Fatal(err)
		}
		for i, o := range ops {
			var mine []string
			for row, g := range groups {
				if ranges[i].Start <= int(g) && int(g) <= ranges[i].End {
					mine = append(mine, rows[row])
				}
			}
			part := appendRows(mem, in, mine...)
			if err := o.Process(ctx, 0, part, out.emit); err != nil {
				t.Fatal(err)
			}
			part.Release()
			if err := o.OnTimer(ctx, out.emit); err != nil {
				t.Fatal(err)
			}
		}
	}
	all := state.KeyGroupRange{Start: 0, End: 127}
	first, in, err := distinctAgg(t, mem, false, 0)
	if err != nil {
		t.Fatal(err)
	}
	feed([]operator.Operator{first}, []state.KeyGroupRange{all}, in, rows[:250])
	storage := state.Storage{Root: t.TempDir()}
	if err := storage.Init(); err != nil {
		t.Fatal(err)
	}
	if err := first.SnapshotState(ctx, checkpoint.Target{ID: 1, Dir: storage.Root}, out.emit, &checkpoint.SubtaskState{}); err != nil {
		t.Fatal(err)
	}
	st := checkpoint.SubtaskState{Subtask: 0}
	if err := first.TakePersist()(ctx, &st); err != nil || st.Keyed == nil {
		t.Fatalf("persist: %v, state %v", err, st.Keyed)
	}
	first.Release()
	restored := &checkpoint.OperatorState{UID: "agg", Parallelism: 1, Subtasks: []checkpoint.SubtaskState{st}}
	ranges := []state.KeyGroupRange{{Start: 0, End: 63}, {Start: 64, End: 127}}
	var second []operator.Operator
	for i, r := range ranges {
		op, _, err := distinctAggAt(t, mem, false, 0, r, i, 2, restored, storage.Root)
		if err != nil {
			t.Fatal(err)
		}
		defer op.Release()
		second = append(second, op)
	}
	// The rows before the checkpoint come again too (a replay): no value
	// may count twice.
	feed(second, ranges, in, rows[200:])
	last := map[string]string{}
	for _, r := range out.take() {
		if strings.HasPrefix(r, "+") {
			k, _, _ := strings.Cut(strings.TrimPrefix(r[3:], ""), ",")
			last[k] = r[2:]
		}
	}
	want := map[string]map[string]bool{}
	counts := map[string]int{}
	for _, r := range append(slices.Clone(rows), rows[200:250]...) {
		k, v, _ := strings.Cut(r, " ")
		if want[k] == nil {
			want[k] = map[string]bool{}
		}
		want[k][v] = true
		counts[k]++
	}
	if len(last) != 13 {
		t.Fatalf("%d keys emitted, want 13: %v", len(last), last)
	}
	for k, vs := range want {
		if got, w := last[k], fmt.Sprintf("[%s, %d, %d]", k, len(vs), counts[k]); got != w {
			t.Errorf("key %s: %s, want %s", k, got, w)
		}
	}
}
