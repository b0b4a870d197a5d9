package operators

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/runtime/checkpoint"
	"github.com/flinkgo/flinkgo/runtime/operator"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/runtime/rowkind"
	"github.com/flinkgo/flinkgo/state"
)

// eqRow is one input row of the equi-join tests: id, key (nil: NULL), a
// string payload, and its row kind.
type eqRow struct {
	id   int64
	key  *int64
	s    string
	kind rowkind.Kind
}

func eqSchema(prefix string, changelog bool) *arrow.Schema {
	s := arrow.NewSchema([]arrow.Field{
		{Name: prefix + "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: prefix + "s", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	if changelog {
		s = rowkind.WithColumn(s)
	}
	return s
}

func eqBatch(mem memory.Allocator, schema *arrow.Schema, rows []eqRow) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for _, r := range rows {
		b.Field(0).(*array.Int64Builder).Append(r.id)
		if r.key == nil {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.Int64Builder).Append(*r.key)
		}
		b.Field(2).(*array.StringBuilder).Append(r.s)
		if rowkind.Has(schema) {
			b.Field(3).(*array.Int8Builder).Append(int8(r.kind))
		}
	}
	return b.NewRecordBatch()
}

type eqSpec struct {
	how          plan.JoinType
	nullsEqual   bool
	changelogIn  bool
	uniqueLeft   bool // lid is the left input's unique key
	ttl          time.Duration
	clock        func() time.Time
	storeNullKey bool
	stateDir     string
}

func newEqJoin(t testing.TB, mem memory.Allocator, spec eqSpec) (*equiJoin, *arrow.Schema) {
	t.Helper()
	in := []*arrow.Schema{eqSchema("l", spec.changelogIn), eqSchema("r", spec.changelogIn)}
	j := &plan.Join{LeftKeys: []string{"k"}, RightKeys: []string{"k"}, How: spec.how, NullsEqual: spec.nullsEqual,
		StateTTLMs: spec.ttl.Milliseconds()}
	if spec.uniqueLeft {
		j.LeftUniqueKey = []string{"lid"}
	}
	op := &plan.Operator{Name: "join", UID: "join", Kind: plan.KindJoin, Node: &plan.Node{Kind: plan.KindJoin, Join: j}}
	out, err := joinSchemaOf(op, in)
	if err != nil {
		t.Fatal(err)
	}
	if spec.stateDir == "" {
		spec.stateDir = t.TempDir()
	}
	c := &operator.Context{Op: op, Parallelism: 1, MaxParallelism: 128, In: in, Out: out,
		Allocator: mem, Logger: slog.New(slog.DiscardHandler),
		Keyed: &operator.KeyedContext{KeyGroups: state.KeyGroupRange{Start: 0, End: 127}, StateDir: spec.stateDir}}
	eq, err := configureEquiJoin(c, Options{})
	if err != nil {
		t.Fatal(err)
	}
	eq.clock, eq.storeUnmatchable = spec.clock, spec.storeNullKey
	if err := eq.openState(); err != nil {
		eq.Release()
		t.Fatal(err)
	}
	return eq, out
}

// changelogTable applies a join's output changelog: the multiset of
// "lid|rid" rows ("-" for a padded side) it ends with.
type changelogTable struct {
	rows map[string]int
	err  error
}

func (c *changelogTable) emit(_ context.Context, b arrow.RecordBatch) error {
	defer b.Release()
	kinds := rowkind.KindsOf(b)
	l, r := b.Column(0).(*array.Int64), b.Column(3).(*array.Int64)
	for i := range int(b.NumRows()) {
		key := cell(l, i) + "|" + cell(r, i)
		if rowkind.At(kinds, i).IsAccumulate() {
			c.rows[key]++
			continue
		}
		if c.rows[key] == 0 && c.err == nil {
			c.err = fmt.Errorf("retraction of %s, which is not in the result", key)
		}
		c.rows[key]--
		if c.rows[key] == 0 {
			delete(c.rows, key)
		}
	}
	return nil
}

func cell(a *array.Int64, i int) string {
	if a.IsNull(i) {
		return "-"
	}
	return fmt.Sprint(a.Value(i))
}

func (c *changelogTable) sorted() []string {
	var out []string
	for k, n := range c.rows {
		for range n {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// eqReference is SQL's result over the final input multisets.
func eqReference(left, right []eqRow, how plan.JoinType, nullsEqual bool) []string {
	final := func(rows []eqRow) []eqRow {
		var live []eqRow
		for _, r := range rows {
			if r.kind.IsAccumulate() {
				live = append(live, r)
				continue
			}
			i := slices.IndexFunc(live, func(x eqRow) bool { return x.id == r.id && keyEq(x.key, r.key, true) && x.s == r.s })
			live = slices.Delete(live, i, i+1)
		}
		return live
	}
	left, right = final(left), final(right)
	var out []string
	rightMatched := make([]bool, len(right))
	for _, l := range left {
		matched := false
		for i, r := range right {
			if keyEq(l.key, r.key, nullsEqual) {
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

func keyEq(a, b *int64, nullsEqual bool) bool {
	if a == nil || b == nil {
		return nullsEqual && a == nil && b == nil
	}
	return *a == *b
}

// eqInputs makes n rows per side with keys in [0, keys), a nullShare of
// NULL keys, exact duplicates, and (retracting) deletions of earlier rows.
func eqInputs(rng *rand.Rand, n, keys int, nullShare float64, retract bool) (left, right []eqRow) {
	gen := func(base int64) []eqRow {
		var rows []eqRow
		for i := range n {
			if retract && len(rows) > 0 && rng.IntN(5) == 0 {
				// delete a live earlier row
				alive := eqReferenceLive(rows)
				if len(alive) > 0 {
					d := alive[rng.IntN(len(alive))]
					d.kind = rowkind.Delete
					rows = append(rows, d)
					continue
				}
			}
			var key *int64
			if rng.Float64() >= nullShare {
				k := int64(rng.IntN(keys))
				key = &k
			}
			id := base + int64(i)
			if len(rows) > 0 && rng.IntN(6) == 0 { // an exact duplicate of an earlier row
				d := rows[rng.IntN(len(rows))]
				d.kind = rowkind.Insert
				rows = append(rows, d)
				continue
			}
			rows = append(rows, eqRow{id: id, key: key, s: fmt.Sprintf("s%d", id)})
		}
		return rows
	}
	return gen(1000), gen(5000)
}

// eqReferenceLive is the rows alive after rows (inserts minus deletes).
func eqReferenceLive(rows []eqRow) []eqRow {
	var live []eqRow
	for _, r := range rows {
		if r.kind.IsAccumulate() {
			live = append(live, r)
			continue
		}
		i := slices.IndexFunc(live, func(x eqRow) bool { return x.id == r.id && x.s == r.s && keyEq(x.key, r.key, true) })
		live = slices.Delete(live, i, i+1)
	}
	return live
}

// runEq feeds both sides in random interleaved batches and returns the
// applied output changelog; with flushes, now and then it writes both
// views to Pebble and empties their caches, as a checkpoint does.
func runEq(t *testing.T, mem memory.Allocator, j *equiJoin, rng *rand.Rand, left, right []eqRow, in [2]*arrow.Schema, flushes bool) *changelogTable {
	t.Helper()
	got := &changelogTable{rows: map[string]int{}}
	ctx := context.Background()
	pos := [2]int{}
	sides := [2][]eqRow{left, right}
	for pos[0] < len(left) || pos[1] < len(right) {
		s := rng.IntN(2)
		if pos[s] == len(sides[s]) {
			s = 1 - s
		}
		n := min(1+rng.IntN(7), len(sides[s])-pos[s])
		b := eqBatch(mem, in[s], sides[s][pos[s]:pos[s]+n])
		pos[s] += n
		err := j.Process(ctx, s, b, got.emit)
		b.Release()
		if err != nil {
			t.Fatal(err)
		}
		if flushes && rng.IntN(12) == 0 { // as a checkpoint does: to Pebble, and out of memory (no cache keys in tests)
			for s := range 2 {
				if err := j.side[s].view.flush(); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if err := j.Finish(ctx, got.emit); err != nil {
		t.Fatal(err)
	}
	if got.err != nil {
		t.Fatal(got.err)
	}
	return got
}

func TestEquiJoinEqualsSQL(t *testing.T) {
	hows := []plan.JoinType{plan.InnerJoin, plan.LeftJoin, plan.RightJoin, plan.FullJoin}
	for _, how := range hows {
		for _, nullShare := range []float64{0, 0.3} {
			for _, nullsEqual := range []bool{false, true} {
				for _, retract := range []bool{false, true} {
					name := fmt.Sprintf("%s/nulls=%v/nullsEqual=%v/retract=%v", how, nullShare, nullsEqual, retract)
					t.Run(name, func(t *testing.T) {
						mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
						defer mem.AssertSize(t, 0)
						rng := rand.New(rand.NewPCG(uint64(how)*7+uint64(nullShare*10), 3))
						left, right := eqInputs(rng, 300, 25, nullShare, retract)
						j, _ := newEqJoin(t, mem, eqSpec{how: how, nullsEqual: nullsEqual, changelogIn: retract})
						defer j.Release()
						got := runEq(t, mem, j, rng, left, right, [2]*arrow.Schema{j.c.In[0], j.c.In[1]}, true)
						want := eqReference(left, right, how, nullsEqual)
						if !slices.Equal(got.sorted(), want) {
							t.Fatalf("got %d rows, want %d\n got %v\nwant %v", len(got.sorted()), len(want), head(got.sorted()), head(want))
						}
					})
				}
			}
		}
	}
}

// TestEquiJoinAppendOnlyInnerHasNoRowKinds: an inner join of append-only
// inputs is append-only itself.
func TestEquiJoinAppendOnlyInnerHasNoRowKinds(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	j, out := newEqJoin(t, mem, eqSpec{how: plan.InnerJoin})
	defer j.Release()
	if rowkind.Has(out) {
		t.Fatalf("inner join of append-only inputs has a row-kind column: %s", out)
	}
	_, outer := newEqJoin(t, mem, eqSpec{how: plan.LeftJoin})
	if !rowkind.Has(outer) {
		t.Fatalf("left join has no row-kind column: %s", outer)
	}
}

// TestEquiJoinOuterRetractsPadded checks the exact changelog of a left
// join as Flink's: padded +I, then -D of it and +I joined on the match,
// and the reverse on the match's retraction.
func TestEquiJoinOuterRetractsPadded(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	j, _ := newEqJoin(t, mem, eqSpec{how: plan.LeftJoin, changelogIn: true})
	defer j.Release()
	var log []string
	emit := func(_ context.Context, b arrow.RecordBatch) error {
		defer b.Release()
		kinds := rowkind.KindsOf(b)
		l, r := b.Column(0).(*array.Int64), b.Column(3).(*array.Int64)
		for i := range int(b.NumRows()) {
			log = append(log, rowkind.At(kinds, i).String()+"["+cell(l, i)+","+cell(r, i)+"]")
		}
		return nil
	}
	k := int64(1)
	feed := func(side int, r eqRow) {
		b := eqBatch(mem, j.c.In[side], []eqRow{r})
		defer b.Release()
		if err := j.Process(context.Background(), side, b, emit); err != nil {
			t.Fatal(err)
		}
	}
	feed(0, eqRow{id: 10, key: &k, s: "a"})
	feed(1, eqRow{id: 20, key: &k, s: "b"})
	feed(1, eqRow{id: 21, key: &k, s: "c"})
	feed(1, eqRow{id: 20, key: &k, s: "b", kind: rowkind.Delete})
	feed(1, eqRow{id: 21, key: &k, s: "c", kind: rowkind.Delete})
	feed(0, eqRow{id: 11, key: nil, s: "n"})
	feed(0, eqRow{id: 11, key: nil, s: "n", kind: rowkind.Delete})
	want := []string{"+I[10,-]", "-D[10,-]", "+I[10,20]", "+I[10,21]", "-D[10,20]", "-D[10,21]", "+I[10,-]", "+I[11,-]", "-D[11,-]"}
	if !slices.Equal(log, want) {
		t.Fatalf("changelog\n got %v\nwant %v", log, want)
	}
}

// TestEquiJoinUniqueKeyView: with a unique key a side stores one row per
// unique key; an update (-U, +U) of that row replaces it.
func TestEquiJoinUniqueKeyView(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	j, _ := newEqJoin(t, mem, eqSpec{how: plan.FullJoin, changelogIn: true, uniqueLeft: true})
	defer j.Release()
	got := &changelogTable{rows: map[string]int{}}
	k1, k2 := int64(1), int64(2)
	steps := []struct {
		side int
		r    eqRow
	}{
		{0, eqRow{id: 1, key: &k1, s: "v1"}},
		{1, eqRow{id: 7, key: &k1, s: "r"}},
		{1, eqRow{id: 8, key: &k2, s: "r"}},
		{0, eqRow{id: 1, key: &k1, s: "v1", kind: rowkind.UpdateBefore}},
		{0, eqRow{id: 1, key: &k2, s: "v2", kind: rowkind.UpdateAfter}},
	}
	for _, st := range steps {
		b := eqBatch(mem, j.c.In[st.side], []eqRow{st.r})
		err := j.Process(context.Background(), st.side, b, got.emit)
		b.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
	if got.err != nil {
		t.Fatal(got.err)
	}
	want := []string{"-|7", "1|8"}
	if !slices.Equal(got.sorted(), want) {
		t.Fatalf("got %v, want %v", got.sorted(), want)
	}
	if err := j.side[0].view.flush(); err != nil {
		t.Fatal(err)
	}
	n := 0
	if err := j.side[0].view.m.ForEach(func(state.Key, []byte, []byte) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("the left side stores %d entries, want 1 (one per unique key)", n)
	}
}

// TestEquiJoinStateTTL: a stored row older than the TTL (processing time)
// is gone: a later row of the other side does not match it.
func TestEquiJoinStateTTL(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	now := time.UnixMilli(1_000_000)
	j, _ := newEqJoin(t, mem, eqSpec{how: plan.InnerJoin, ttl: time.Hour, clock: func() time.Time { return now }})
	defer j.Release()
	got := &changelogTable{rows: map[string]int{}}
	k := int64(1)
	feed := func(side int, r eqRow) {
		b := eqBatch(mem, j.c.In[side], []eqRow{r})
		defer b.Release()
		if err := j.Process(context.Background(), side, b, got.emit); err != nil {
			t.Fatal(err)
		}
	}
	feed(0, eqRow{id: 1, key: &k})
	now = now.Add(59 * time.Minute)
	feed(1, eqRow{id: 2, key: &k}) // matches: 59 min old
	now = now.Add(2 * time.Minute)
	feed(1, eqRow{id: 3, key: &k}) // the left row expired after 1 h
	now = now.Add(59 * time.Minute)
	feed(0, eqRow{id: 4, key: &k}) // row 2 expired (61 min old), row 3 not (59 min)
	want := []string{"1|2", "4|3"}
	if !slices.Equal(got.sorted(), want) {
		t.Fatalf("got %v, want %v", got.sorted(), want)
	}
}

// TestEquiJoinNullKeyRuleSavesState runs one workload with 30 % NULL keys
// on both sides twice, with the NULL-key rule and with it switched off:
// the outputs are equal and the state (Pebble's files after a flush, and
// the checkpoint written) is smaller with the rule.
func TestEquiJoinNullKeyRuleSavesState(t *testing.T) {
	for _, how := range []plan.JoinType{plan.InnerJoin, plan.FullJoin} {
		t.Run(how.String(), func(t *testing.T) {
			var outputs [2][]string
			var dbBytes, chkBytes [2]int64
			for i, storeNull := range []bool{false, true} {
				mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
				stateDir := t.TempDir()
				j, _ := newEqJoin(t, mem, eqSpec{how: how, storeNullKey: storeNull, stateDir: stateDir})
				rng := rand.New(rand.NewPCG(5, 5))
				left, right := eqInputs(rng, 5000, 500, 0.3, false)
				got := runEq(t, mem, j, rng, left, right, [2]*arrow.Schema{j.c.In[0], j.c.In[1]}, false)
				outputs[i] = got.sorted()
				chkDir := t.TempDir()
				if err := (state.Storage{Root: chkDir}).Init(); err != nil {
					t.Fatal(err)
				}
				if err := j.SnapshotState(context.Background(), checkpoint.Target{ID: 1, Dir: chkDir}, nil, &checkpoint.SubtaskState{}); err != nil {
					t.Fatal(err)
				}
				if err := j.TakePersist()(context.Background(), &checkpoint.SubtaskState{}); err != nil {
					t.Fatal(err)
				}
				dbBytes[i] = dirBytes(t, filepath.Join(j.keyed.dir, "db"), ".sst")
				chkBytes[i] = dirBytes(t, chkDir, "")
				j.Release()
				mem.AssertSize(t, 0)
			}
			if !slices.Equal(outputs[0], outputs[1]) {
				t.Fatalf("outputs differ: %d rows with the rule, %d without", len(outputs[0]), len(outputs[1]))
			}
			t.Logf("%s join, 30%% NULL keys, 2x5000 rows: Pebble sstables %d bytes with the rule, %d without (%.0f%%); checkpoint %d vs %d bytes (%.0f%%)",
				how, dbBytes[0], dbBytes[1], 100*float64(dbBytes[0])/float64(dbBytes[1]), chkBytes[0], chkBytes[1], 100*float64(chkBytes[0])/float64(chkBytes[1]))
			if dbBytes[0] >= dbBytes[1] || chkBytes[0] >= chkBytes[1] {
				t.Fatalf("the NULL-key rule saved nothing: Pebble %d vs %d, checkpoint %d vs %d bytes", dbBytes[0], dbBytes[1], chkBytes[0], chkBytes[1])
			}
		})
	}
}

// dirBytes sums the sizes of the files under dir whose names end in suffix.
func dirBytes(t *testing.T, dir, suffix string) int64 {
	t.Helper()
	var n int64
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(d.Name(), suffix) {
			return err
		}
		info, err := d.Info()
		if err == nil {
			n += info.Size()
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
