package operators

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/runtime/checkpoint"
	"github.com/flinkgo/flinkgo/runtime/operator"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/runtime/rowkind"
	"github.com/flinkgo/flinkgo/state"
)

// changelogAgg builds a keyed aggregation key_by(k).agg(min(v), max(v),
// count(), sum(v)) over a retract stream, emitting updates in mode, on a
// real Pebble backend; a cache of one group makes checkpoints move groups
// out of memory.
func changelogAgg(t testing.TB, mem memory.Allocator, mode rowkind.Mode) (operator.Operator, *arrow.Schema) {
	t.Helper()
	in := rowkind.WithColumn(arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil))
	out := rowkind.WithColumn(arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "lo", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "hi", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "n", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "s", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil))
	c := &operator.Context{
		Op: &plan.Operator{Name: "agg", UID: "agg", Kind: plan.KindKeyedAggregate, EmitUpdates: true, Changelog: mode,
			Node: &plan.Node{Kind: plan.KindKeyedAggregate, KeyedAggregate: &plan.KeyedAggregate{
				Keys: []string{"k"}, Aggregates: []*plan.Aggregate{
					{Function: "min", Column: "v", Name: "lo"}, {Function: "max", Column: "v", Name: "hi"},
					{Function: "count", Name: "n"}, {Function: "sum", Column: "v", Name: "s"},
				}}}},
		Parallelism: 1, MaxParallelism: 128, In: []*arrow.Schema{in}, Out: out, Allocator: mem,
		Keyed: &operator.KeyedContext{KeyGroups: state.KeyGroupRange{Start: 0, End: 127}, StateDir: t.TempDir()},
	}
	op, err := keyedAggregateKind(Options{KeyedCacheGroups: 1, UpdateInterval: 1 << 62}).New(c)
	if err != nil {
		t.Fatal(err)
	}
	return op, in
}

// changes builds a batch of (kind, key, value) rows; a value "null" is a
// null.
func changes(mem memory.Allocator, schema *arrow.Schema, rows ...string) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for _, r := range rows {
		var kind, k, v string
		fmt.Sscanf(r, "%s %s %s", &kind, &k, &v)
		rk, err := rowkind.Parse(kind)
		if err != nil {
			panic(err)
		}
		b.Field(0).(*array.StringBuilder).Append(k)
		if v == "null" {
			b.Field(1).AppendNull()
		} else if err := b.Field(1).AppendValueFromString(v); err != nil {
			panic(err)
		}
		b.Field(2).(*array.Int8Builder).Append(int8(rk))
	}
	return b.NewRecordBatch()
}

// printed collects emitted rows as print() shows them: "+I[a, 3, 7, 3, 15]".
type printed struct{ rows []string }

func (p *printed) emit(_ context.Context, b arrow.RecordBatch) error {
	defer b.Release()
	kinds := rowkind.KindsOf(b)
	for r := range int(b.NumRows()) {
		vals := make([]string, b.NumCols()-1)
		for c := range vals {
			vals[c] = b.Column(c).ValueStr(r)
		}
		p.rows = append(p.rows, rowkind.At(kinds, r).String()+"["+strings.Join(vals, ", ")+"]")
	}
	return nil
}

func (p *printed) take() []string {
	out := p.rows
	p.rows = nil
	return out
}

// Retracting a key's current minimum or maximum replaces it by the next
// value of the key's multiset (in Pebble, across a checkpoint that moved
// the group out of memory); duplicates count; a key left with no rows is
// deleted (-D of its last row); a retract stream pairs -U with +U, an
// upsert stream has +U alone.
func TestKeyedAggregationRetractsMinAndMax(t *testing.T) {
	for _, mode := range []rowkind.Mode{rowkind.Retract, rowkind.Upsert} {
		t.Run(mode.String(), func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			ctx := context.Background()
			op, in := changelogAgg(t, mem, mode)
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
			want := func(got []string, want ...string) {
				t.Helper()
				if mode == rowkind.Upsert {
					want = slices.DeleteFunc(want, func(r string) bool { return strings.HasPrefix(r, "-U") })
				}
				if !slices.Equal(got, want) {
					t.Errorf("emitted\n  %v\nwant\n  %v", got, want)
				}
			}
			want(step("+I a 5", "+I a 3", "+I a 7", "+I b 1"), "+I[a, 3, 7, 3, 15]", "+I[b, 1, 1, 1, 1]")
			// The current minimum goes.
			want(step("-D a 3"), "-U[a, 3, 7, 3, 15]", "+U[a, 5, 7, 2, 12]")

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
			// A duplicate 5 comes and one 5 goes: 5 stays; the maximum goes.
			want(step("+I a 5", "-U a 5", "-D a 7"), "-U[a, 5, 7, 2, 12]", "+U[a, 5, 5, 1, 5]")
			// A -U before its +U in one batch: the new maximum is kept.
			want(step("-U a 5", "+U a 9"), "-U[a, 5, 5, 1, 5]", "+U[a, 9, 9, 1, 9]")
			// Nothing changes the results: nothing is emitted.
			want(step("+I b 4", "-D b 4"))
			// Every row of a key retracted: -D of its last row.
			want(step("-D a 9", "-D b 1"), "-D[a, 9, 9, 1, 9]", "-D[b, 1, 1, 1, 1]")
			// The key comes back: a new +I, from an empty multiset.
			want(step("+I a 2"), "+I[a, 2, 2, 1, 2]")
			// A value below the minimum comes and goes in one batch: the
			// minimum is still 2, and nothing is emitted.
			want(step("+I a 1", "-D a 1"))
			want(step("+I a 3"), "-U[a, 2, 2, 1, 2]", "+U[a, 2, 3, 2, 5]")
			// A value between the minimum and the maximum goes: both stay
			// (no multiset scan); the multiset still gives the next minimum.
			want(step("+I a 4"), "-U[a, 2, 3, 2, 5]", "+U[a, 2, 4, 3, 9]")
			want(step("-D a 3"), "-U[a, 2, 4, 3, 9]", "+U[a, 2, 4, 2, 6]")
			want(step("-D a 2"), "-U[a, 2, 4, 2, 6]", "+U[a, 4, 4, 1, 4]")

			b := changes(mem, in, "-D a 42")
			defer b.Release()
			err := op.Process(ctx, 0, b, out.emit)
			if err == nil || !strings.Contains(err.Error(), "retracts 42, a value the key never had") {
				t.Errorf("retracting a value never seen: %v", err)
			}
		})
	}
}

// sum of a key whose values are all null is NULL (SQL, Flink, Arrow), not
// 0, and a retraction of the key's last non-null value makes it NULL again,
// in memory and after a checkpoint moved the group to Pebble; count(v)
// counts non-null values, count() rows.
func TestKeyedAggregationSumOfOnlyNullsIsNull(t *testing.T) {
	for _, mode := range []rowkind.Mode{rowkind.Retract, rowkind.Upsert} {
		t.Run(mode.String(), func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			ctx := context.Background()
			op, in := changelogAgg(t, mem, mode)
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
			want := func(got []string, want ...string) {
				t.Helper()
				if mode == rowkind.Upsert {
					want = slices.DeleteFunc(want, func(r string) bool { return strings.HasPrefix(r, "-U") })
				}
				if !slices.Equal(got, want) {
					t.Errorf("emitted\n  %v\nwant\n  %v", got, want)
				}
			}
			want(step("+I a null", "+I b 5", "+I b null"), "+I[a, (null), (null), 1, (null)]", "+I[b, 5, 5, 2, 5]")
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
			// b's only non-null value goes: its sum is NULL again.
			want(step("-D b 5"), "-U[b, 5, 5, 2, 5]", "+U[b, (null), (null), 1, (null)]")
			// A value comes to a: the sum is that value.
			want(step("+I a -3"), "-U[a, (null), (null), 1, (null)]", "+U[a, -3, -3, 2, -3]")
			// A value that sums to 0 is not NULL: sum(-3, 3) is 0.
			want(step("+I a 3"), "-U[a, -3, -3, 2, -3]", "+U[a, -3, 3, 3, 0]")
		})
	}
}

// The multiset's value encoding orders as the values do, so its first
// entry is the minimum and its last the maximum, and floats decode back.
func TestOrderedValuesSortAsValues(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	floats := []float64{math.Inf(-1), -1e300, -2.5, -1e-300, 0, 1e-300, 3, 1e300, math.Inf(1)}
	fb := array.NewFloat64Builder(mem)
	fb.AppendValues(floats, nil)
	fcol := fb.NewArray()
	fb.Release()
	defer fcol.Release()
	ints := []int64{math.MinInt64, -7, -1, 0, 1, 42, math.MaxInt64}
	ib := array.NewInt64Builder(mem)
	ib.AppendValues(ints, nil)
	icol := ib.NewArray()
	ib.Release()
	defer icol.Release()
	strs := []string{"", "A", "Z", "a", "ab", "b", "é"}
	sb := array.NewStringBuilder(mem)
	sb.AppendValues(strs, nil)
	scol := sb.NewArray()
	sb.Release()
	defer scol.Release()
	for _, tc := range []struct {
		name string
		spec aggSpec
		col  arrow.Array
	}{
		{"float64", aggSpec{fn: "min"}, fcol},
		{"int64", aggSpec{fn: "min", isInt: true}, icol},
		{"string", aggSpec{fn: "min", isStr: true}, scol},
	} {
		var prev []byte
		for row := range tc.col.Len() {
			enc := orderedValue(nil, tc.spec, tc.col, row)
			if prev != nil && bytes.Compare(prev, enc) >= 0 {
				t.Errorf("%s: %s does not encode after the value before it", tc.name, tc.col.ValueStr(row))
			}
			prev = enc
			if tc.name == "float64" {
				if got := orderedFloat(binary.BigEndian.Uint64(enc)); got != floats[row] {
					t.Errorf("float %v decodes as %v", floats[row], got)
				}
			}
		}
	}
}

// BenchmarkKeyedAggregationChangelog: rows per second into key_by(k).agg(min,
// max, count, sum) over 1000 keys, append-only (+I only, the in-memory
// path) and as a changelog (every row also goes through the min/max
// multisets in Pebble; half the rows retract an earlier one).
func BenchmarkKeyedAggregationChangelog(b *testing.B) {
	const rows = 10000
	// Keys i%1000 take the values i: each key's values are k, k+1000, ...,
	// k+9000. "retractions" adds them all and retracts them all in turn
	// (each retraction batch takes every key's minimum and maximum);
	// "retract-middle" retracts and re-adds the values between each key's
	// minimum and maximum, which leave both as they are.
	for _, name := range []string{"append-only", "retractions", "retract-middle"} {
		changelog := name != "append-only"
		b.Run(name, func(b *testing.B) {
			mem := memory.NewGoAllocator()
			op, in := changelogAgg(b, mem, rowkind.Retract)
			defer op.Release()
			schema := in
			if !changelog {
				schema = rowkind.WithoutColumn(in)
			}
			build := func(kind rowkind.Kind, keep func(i int) bool) arrow.RecordBatch {
				rb := array.NewRecordBuilder(mem, schema)
				defer rb.Release()
				for i := range rows {
					if !keep(i) {
						continue
					}
					rb.Field(0).(*array.StringBuilder).Append(fmt.Sprint(i % 1000))
					rb.Field(1).(*array.Int64Builder).Append(int64(i))
					if changelog {
						rb.Field(2).(*array.Int8Builder).Append(int8(kind))
					}
				}
				return rb.NewRecordBatch()
			}
			all := func(int) bool { return true }
			middle := func(i int) bool { return i/1000 > 0 && i/1000 < 9 }
			discard := func(_ context.Context, out arrow.RecordBatch) error { out.Release(); return nil }
			ctx := context.Background()
			adds, retracts := build(rowkind.Insert, all), build(rowkind.Delete, all)
			defer func() { adds.Release(); retracts.Release() }()
			perBatch := rows
			if name == "retract-middle" {
				if err := op.Process(ctx, 0, adds, discard); err != nil {
					b.Fatal(err)
				}
				adds.Release()
				retracts.Release()
				adds, retracts = build(rowkind.Insert, middle), build(rowkind.Delete, middle)
				perBatch = int(adds.NumRows())
			}
			b.ResetTimer()
			for i := range b.N {
				batch := adds
				if changelog && i%2 == 0 {
					batch = retracts
				}
				if name == "retractions" {
					batch = adds
					if i%2 == 1 {
						batch = retracts
					}
				}
				if err := op.Process(ctx, 0, batch, discard); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*perBatch)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
