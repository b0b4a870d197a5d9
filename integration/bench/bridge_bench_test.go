// Package bench measures the UDF bridge with real Python workers (the
// runner and its worker behind a bundle operator, without planner or
// tasks: bridgeAlone) and the runtime's pipelines over it:
//
//	go test -run '^$' -bench . -benchtime 3x ./integration/bench/
//
// Throughput benchmarks report rows/s over the rows after a warm-up batch
// (worker start and imports excluded); the round trip reports µs per one-row
// batch on an open worker.
package bench

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/integration/testkit"
	"github.com/flinkgo/flinkgo/udf/bridge/pluginrunner"
	"github.com/flinkgo/flinkgo/udf/bridge/proto/workerpb"
)

const udfSource = `
from flinkgo import udf

@udf("int64", func_type="arrow")
def ident_int(x):
    return x

@udf("string", func_type="arrow")
def ident_str(s):
    return s

@udf("float64", func_type="pandas")
def affine(x):
    return x * 2 + 1

@udf("string")
def upper(s):
    return s.upper()
`

type workload struct {
	name  string
	calls func(specs map[string]*workerpb.UdfSpec) []*workerpb.UdfCall
	batch func(mem memory.Allocator, rows int) arrow.RecordBatch
	// rows sent per measured run (after the warm-up batch)
	rows int
}

var workloads = []workload{
	{
		name: "arrow-identity-int64+string",
		calls: func(s map[string]*workerpb.UdfSpec) []*workerpb.UdfCall {
			return []*workerpb.UdfCall{testkit.Call(s["ident_int"], "n2", "n"), testkit.Call(s["ident_str"], "s2", "s")}
		},
		batch: intStringBatch,
		rows:  4_000_000,
	},
	{
		name: "pandas-affine-float64",
		calls: func(s map[string]*workerpb.UdfSpec) []*workerpb.UdfCall {
			return []*workerpb.UdfCall{testkit.Call(s["affine"], "y", "x")}
		},
		batch: float64Batch,
		rows:  10_000_000,
	},
	{
		name: "general-upper-string",
		calls: func(s map[string]*workerpb.UdfSpec) []*workerpb.UdfCall {
			return []*workerpb.UdfCall{testkit.Call(s["upper"], "u", "s")}
		},
		batch: intStringBatch,
		rows:  1_000_000,
	},
}

func BenchmarkBridgeThroughput(b *testing.B) {
	specs := testkit.UDFSpecs(b, udfSource)
	for _, w := range workloads {
		for _, batchSize := range []int{1_000, 10_000, 65_536} {
			for _, concurrency := range []int{1, 2} {
				name := fmt.Sprintf("%s/batch=%d/concurrency=%d", w.name, batchSize, concurrency)
				b.Run(name, func(b *testing.B) {
					var total float64
					for b.Loop() {
						total += runThroughput(b, w, specs, batchSize, 0, concurrency)
					}
					b.ReportMetric(total/float64(b.N), "rows/s")
				})
			}
		}
	}
}

// BenchmarkBridgeBundle runs the pandas and the row UDF on one worker at
// batch sizes 10 000 and 65 536 in bundles of 20 000 and of 100 000 (the
// default) rows: what a bundle boundary costs (the effective batch size is
// min(batch, bundle)).
func BenchmarkBridgeBundle(b *testing.B) {
	specs := testkit.UDFSpecs(b, udfSource)
	for _, w := range workloads {
		if w.name != "pandas-affine-float64" && w.name != "general-upper-string" {
			continue
		}
		for _, bundleSize := range []int{20_000, 100_000} {
			for _, batchSize := range []int{10_000, 65_536} {
				b.Run(fmt.Sprintf("%s/bundle=%d/batch=%d", w.name, bundleSize, batchSize), func(b *testing.B) {
					var total float64
					for b.Loop() {
						total += runThroughput(b, w, specs, batchSize, bundleSize, 1)
					}
					b.ReportMetric(total/float64(b.N), "rows/s")
				})
			}
		}
	}
}

// runThroughput runs one workload and returns rows/s measured from the end
// of the warm-up batch's result to the last result.
func runThroughput(b *testing.B, w workload, specs map[string]*workerpb.UdfSpec, batchSize, bundleSize, concurrency int) float64 {
	mem := memory.NewGoAllocator()
	batch := w.batch(mem, batchSize)
	defer batch.Release()
	runner := pluginrunner.Options{
		Python: testkit.Python(b),
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	batches := max(w.rows/batchSize, 2*concurrency)
	// One warm-up batch per worker, answered before the clock starts.
	warmRows := int64(concurrency * batchSize)
	in := make(chan arrow.RecordBatch, 2*concurrency)
	warmedUp := make(chan struct{})
	var mu sync.Mutex
	var seen int64
	var start, end time.Time
	go func() {
		defer close(in)
		for range concurrency {
			batch.Retain()
			in <- batch
		}
		<-warmedUp
		for range batches {
			batch.Retain()
			in <- batch
		}
	}()
	err := bridgeAlone(context.Background(), w.calls(specs), batch.Schema(), concurrency, batchSize, bundleSize, runner, mem, in, func(rows int64) {
		mu.Lock()
		defer mu.Unlock()
		seen += rows
		if seen == warmRows {
			start = time.Now()
			close(warmedUp)
		}
		end = time.Now()
	})
	if err != nil {
		b.Fatal(err)
	}
	measured := seen - warmRows
	return float64(measured) / end.Sub(start).Seconds()
}

// BenchmarkOneRowRoundTrip measures one one-row batch from Go to Python and
// back on an open worker: Process, then the blocking TakeResult. The arrow
// identity UDF shows the bridge's own cost; the pandas UDF adds pandas'
// per-call overhead (Series construction and arithmetic).
func BenchmarkOneRowRoundTrip(b *testing.B) {
	specs := testkit.UDFSpecs(b, udfSource)
	for _, udf := range []string{"arrow-identity", "pandas-affine"} {
		b.Run(udf, func(b *testing.B) {
			mem := memory.NewGoAllocator()
			batch := float64Batch(mem, 1)
			defer batch.Release()
			call := testkit.Call(specs["affine"], "y", "x")
			if udf == "arrow-identity" {
				batch.Release()
				batch = intStringBatch(mem, 1)
				call = testkit.Call(specs["ident_int"], "y", "n")
			}
			r, err := pluginrunner.NewRunner(pluginrunner.Options{
				Calls:       []*workerpb.UdfCall{call},
				InputSchema: batch.Schema(),
				Python:      testkit.Python(b),
				Allocator:   mem,
				Logger:      slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
			})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			if err := r.Open(ctx); err != nil {
				b.Fatal(err)
			}
			defer func() {
				if err := r.Close(); err != nil {
					b.Error(err)
				}
			}()
			var seq int64
			roundTrip := func() {
				if err := r.Process(ctx, seq, batch); err != nil {
					b.Fatal(err)
				}
				seq++
				res, err := r.TakeResult(ctx)
				if err != nil {
					b.Fatal(err)
				}
				res.Batch.Release()
			}
			for range 200 { // warm up the interpreter and the connection
				roundTrip()
			}
			start := time.Now()
			for b.Loop() {
				roundTrip()
			}
			b.ReportMetric(float64(time.Since(start).Microseconds())/float64(b.N), "µs/roundtrip")
		})
	}
}

func float64Batch(mem memory.Allocator, rows int) arrow.RecordBatch {
	schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Float64}}, nil)
	bld := array.NewRecordBuilder(mem, schema)
	defer bld.Release()
	f := bld.Field(0).(*array.Float64Builder)
	f.Reserve(rows)
	for i := range rows {
		f.UnsafeAppend(float64(i) * 0.5)
	}
	return bld.NewRecordBatch()
}

func intStringBatch(mem memory.Allocator, rows int) arrow.RecordBatch {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "n", Type: arrow.PrimitiveTypes.Int64},
		{Name: "s", Type: arrow.BinaryTypes.String},
	}, nil)
	bld := array.NewRecordBuilder(mem, schema)
	defer bld.Release()
	words := strings.Fields("alpha beta gamma delta epsilon zeta eta theta iota kappa")
	for i := range rows {
		bld.Field(0).(*array.Int64Builder).Append(int64(i))
		bld.Field(1).(*array.StringBuilder).Append(words[i%len(words)])
	}
	return bld.NewRecordBatch()
}
