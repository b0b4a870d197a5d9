package operators

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/runtime/operator"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/state"
)

// Benchmarks of one window aggregation subtask, driven as its task drives
// it: batches of 10,000 rows (100 keys, 10 rows per event-time ms, up to
// 1 s of disorder), each followed by the watermark 1 s behind the greatest
// time, so windows fire all along; real Pebble for state and timers.
//
//	go test -run '^$' -bench Window -benchtime 2000000x ./runtime/operators/
//
// The slide is 1 s in both hop benchmarks and the size 2 s or 100 s: a row
// costs the same whatever size/slide is (one slice update); what grows with
// size/slide is merging size/slide slices when a window fires, once per key
// and slide, which a key's rows per slide (here 100) share. (With the size
// fixed and the slide shrinking instead, every per-slide cost, timers
// included, is shared by fewer rows, with slices or without.)
func BenchmarkWindowHopCount(b *testing.B) {
	for _, tc := range []struct {
		name        string
		size, slide int64
	}{
		{"size/slide=2", 2_000, 1_000},
		{"size/slide=100", 100_000, 1_000},
	} {
		b.Run(tc.name, func(b *testing.B) {
			benchWindow(b, &plan.WindowAggregate{TimeColumn: "t", Kind: plan.Hop, SizeMs: tc.size, SlideMs: tc.slide,
				Keys: []string{"k"}, Aggregates: []*plan.Aggregate{{Function: "count", Name: "n"}}})
		})
	}
}

// BenchmarkWindowTumbleCount is Nexmark q7's shape, per key: a 10 s
// tumbling count.
func BenchmarkWindowTumbleCount(b *testing.B) {
	benchWindow(b, &plan.WindowAggregate{TimeColumn: "t", Kind: plan.Tumble, SizeMs: 10_000,
		Keys: []string{"k"}, Aggregates: []*plan.Aggregate{{Function: "count", Name: "n"}}})
}

func benchWindow(b *testing.B, spec *plan.WindowAggregate) {
	const batchRows, keys, rowsPerMs, disorder = 10_000, 100, 10, 1_000
	mem := memory.NewGoAllocator()
	in := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64},
		{Name: "t", Type: &arrow.TimestampType{Unit: arrow.Millisecond}},
	}, nil)
	ts := &arrow.TimestampType{Unit: arrow.Millisecond}
	out := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64}, {Name: "window_start", Type: ts},
		{Name: "window_end", Type: ts}, {Name: "n", Type: arrow.PrimitiveTypes.Int64}}, nil)
	c := &operator.Context{
		Op: &plan.Operator{Name: "window", UID: "window", Kind: plan.KindWindowAggregate,
			Node: &plan.Node{Kind: plan.KindWindowAggregate, WindowAggregate: spec}},
		Parallelism: 1, MaxParallelism: 128, In: []*arrow.Schema{in}, Out: out, Allocator: mem, Counters: &operator.Counters{},
		Keyed: &operator.KeyedContext{KeyGroups: state.KeyGroupRange{Start: 0, End: 127}, StateDir: b.TempDir()},
	}
	op, err := windowAggregateKind(Options{KeyedCacheGroups: 1 << 20}).New(c)
	if err != nil {
		b.Fatal(err)
	}
	defer op.Release()
	// 32 distinct batches, reused with times shifted, built before the clock.
	rng := rand.New(rand.NewPCG(1, 2))
	var keyCols [32][]int64
	var offsets [32][]int64
	for i := range keyCols {
		for range batchRows {
			keyCols[i] = append(keyCols[i], rng.Int64N(keys))
			offsets[i] = append(offsets[i], rng.Int64N(disorder))
		}
	}
	windowRows := 0
	emit := func(_ context.Context, r arrow.RecordBatch) error {
		windowRows += int(r.NumRows())
		r.Release()
		return nil
	}
	ctx := context.Background()
	b.ResetTimer()
	var row int64
	for done := 0; done < b.N; done += batchRows {
		b.StopTimer()
		i := (done / batchRows) % len(keyCols)
		kb := array.NewInt64Builder(mem)
		kb.AppendValues(keyCols[i], nil)
		tb := array.NewTimestampBuilder(mem, ts)
		maxT := int64(math.MinInt64)
		for j := range batchRows {
			t := (row+int64(j))/rowsPerMs + offsets[i][j]
			tb.Append(arrow.Timestamp(t))
			maxT = max(maxT, t)
		}
		row += batchRows
		kc, tc := kb.NewArray(), tb.NewArray()
		kb.Release()
		tb.Release()
		batch := array.NewRecordBatch(in, []arrow.Array{kc, tc}, batchRows)
		kc.Release()
		tc.Release()
		b.StartTimer()
		if err := op.Process(ctx, 0, batch, emit); err != nil {
			b.Fatal(err)
		}
		batch.Release()
		if _, err := op.OnWatermark(ctx, operator.Watermark(maxT-disorder-1), emit); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := op.OnWatermark(ctx, operator.Watermark(math.MaxInt64), emit); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	b.ReportMetric(float64(row)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(windowRows), "window-rows")
}
