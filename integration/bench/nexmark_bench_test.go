package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flinkgo/flinkgo/connectors/nexmark"
	"github.com/flinkgo/flinkgo/integration/testkit"
	"github.com/flinkgo/flinkgo/runtime/connector"
	"github.com/flinkgo/flinkgo/runtime/job"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
	"github.com/flinkgo/flinkgo/udf/bridge/pluginrunner"
)

// nexmarkEvents is the stream each query reads (46 in 50 are bids):
// 2 M, or $FLINKGO_BENCH_NEXMARK_EVENTS.
var nexmarkEvents = func() int64 {
	if n, err := strconv.ParseInt(os.Getenv("FLINKGO_BENCH_NEXMARK_EVENTS"), 10, 64); err == nil && n > 0 {
		return n
	}
	return 2_000_000
}()

// nexmarkQueries are Nexmark's first queries over env.nexmark("bid"), and
// a keyed aggregation, each ending in a collect sink (Flink's runs end in
// a blackhole sink). want is the rows the sink must see. warm runs the
// query once untimed first and lends its workers to the timed runs (as a
// server's worker pool does for successive jobs), to show the steady state
// without the workers' start (mostly importing pandas: about 0.8 CPU
// seconds each).
var nexmarkQueries = []struct {
	name, pipeline string
	want           func(nexmarkFacts) int64
	warm           bool
}{
	{"q0-passthrough", `bids`, func(f nexmarkFacts) int64 { return f.bids }, false},
	{"q1-pandas-udf", q1, func(f nexmarkFacts) int64 { return f.bids }, false},
	{"q1-pandas-udf-warm-workers", q1, func(f nexmarkFacts) int64 { return f.bids }, true},
	{"q2-filter", `bids.filter(fg.col("auction") % 123 == 0).select("auction", "price")`, func(f nexmarkFacts) int64 { return f.q2 }, false},
	{"count-max-per-auction", `bids.key_by("auction").agg(fg.count().alias("bids"), fg.max("price").alias("top"))`, func(f nexmarkFacts) int64 { return f.auctions }, false},
}

const q1 = `bids.with_column("price", dollar_to_euro(fg.col("price")))`

// BenchmarkNexmark runs Nexmark's q0 (pass-through), q1 (currency
// conversion, here a pandas UDF: price * 0.908), q2 (auction % 123 == 0)
// and a keyed count and max per auction on nexmarkEvents Nexmark-shaped
// events, at parallelism 1 and 2, timed from start to the last row
// (workers' start included but in the warm variant). It reports events
// per second (every event of the stream, as Nexmark counts: the source
// generates persons and auctions too) and per CPU second of the runtime
// and its workers. Flink 1.13 published about 155-175 k events/s per core
// on q0-q2 (Java operators, no Python).
//
//	go test -run '^$' -bench Nexmark -benchtime 1x ./integration/bench/
func BenchmarkNexmark(b *testing.B) {
	facts := nexmarkCount(b)
	for _, q := range nexmarkQueries {
		for _, p := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/parallelism=%d", q.name, p), func(b *testing.B) {
				g := nexmarkPlan(b, q.pipeline, p)
				logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
				runner := pluginrunner.Options{Python: testkit.Python(b), Logger: logger}
				if q.warm {
					pool := pluginrunner.NewPool(logger)
					defer pool.Close()
					runner.Pool, runner.IdleTimeout, runner.MaxIdle = pool, time.Minute, p
				}
				run := func() {
					var rows atomic.Int64 // the sink's subtasks call Collect concurrently
					_, err := job.Run(context.Background(), g, job.Options{
						Runner: runner,
						Collect: func(_ *plan.Operator, _ int, r arrow.RecordBatch) error {
							rows.Add(r.NumRows())
							r.Release()
							return nil
						},
					})
					if err != nil {
						b.Fatal(err)
					}
					if want := q.want(facts); rows.Load() != want {
						b.Fatalf("%d rows, want %d", rows.Load(), want)
					}
				}
				if q.warm {
					run()
				}
				var elapsed, runtimeCPU, workerCPU time.Duration
				for b.Loop() {
					startSelf, startChildren := cpuTimes(b)
					start := time.Now()
					run()
					elapsed += time.Since(start)
					self, children := cpuTimes(b)
					runtimeCPU += self - startSelf
					workerCPU += children - startChildren
				}
				events := float64(nexmarkEvents) * float64(b.N)
				b.ReportMetric(events/elapsed.Seconds(), "events/s")
				b.ReportMetric(events/(runtimeCPU+workerCPU).Seconds(), "events/cpu-s")
				// Where the CPU went: this process (the runtime, the
				// generator included) and the workers.
				b.ReportMetric(runtimeCPU.Seconds()/float64(b.N), "runtime-cpu-s/op")
				b.ReportMetric(workerCPU.Seconds()/float64(b.N), "worker-cpu-s/op")
			})
		}
	}
}

func nexmarkPlan(b *testing.B, pipeline string, p int) *plan.Graph {
	dir := b.TempDir()
	b.Setenv("BENCH_PARALLELISM", fmt.Sprint(p))
	jp := testkit.JobPlan(b, fmt.Sprintf(`
import os
import flinkgo as fg
from flinkgo import udf

@udf("float64", func_type="pandas")
def dollar_to_euro(price):
    return price * 0.908

env = fg.Environment(parallelism=int(os.environ["BENCH_PARALLELISM"]))
bids = env.nexmark("bid", events=%d)
%s.write_csv(os.path.join(os.environ["FLINKGO_TEST_DIR"], "out"))
plan = env.plan("nexmark-bench")
`, nexmarkEvents, pipeline), dir)
	return collectGraph(b, jp)
}

// nexmarkFacts are what the queries must return, counted on the
// generator's bids read directly.
type nexmarkFacts struct{ bids, q2, auctions int64 }

func nexmarkCount(b *testing.B) nexmarkFacts {
	src, err := nexmark.Source().Decode(&planpb.Source{Kind: &planpb.Source_Nexmark{Nexmark: &planpb.NexmarkSource{Kind: planpb.NexmarkSource_BID, Events: nexmarkEvents}}})
	if err != nil {
		b.Fatal(err)
	}
	r, err := src.Open(connector.ReaderConfig{Schema: nexmark.Schema(planpb.NexmarkSource_BID), Parallelism: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = r.Close() }()
	var f nexmarkFacts
	auctions := map[int64]bool{}
	for {
		batch, err := r.Next(context.Background())
		if err == io.EOF {
			break
		}
		if err != nil {
			b.Fatal(err)
		}
		for _, a := range batch.Column(0).(*array.Int64).Int64Values() {
			f.bids++
			if a%123 == 0 {
				f.q2++
			}
			auctions[a] = true
		}
		batch.Release()
	}
	f.auctions = int64(len(auctions))
	return f
}
