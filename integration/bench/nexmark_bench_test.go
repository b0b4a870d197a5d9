package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flinkgo/flinkgo/integration/testkit"
	"github.com/flinkgo/flinkgo/runtime/job"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
	"github.com/flinkgo/flinkgo/runtime/source"
	"github.com/flinkgo/flinkgo/udf/bridge/pluginrunner"
)

// nexmarkEvents is the stream each query reads: 46 in 50 are bids.
const nexmarkEvents = 2_000_000

// nexmarkQueries are Nexmark's first queries over env.nexmark("bid"), and
// a keyed aggregation, each ending in a collect sink (Flink's runs end in
// a blackhole sink). want is the rows the sink must see.
var nexmarkQueries = []struct {
	name, pipeline string
	want           func(nexmarkFacts) int64
}{
	{"q0-passthrough", `bids`, func(f nexmarkFacts) int64 { return f.bids }},
	{"q1-pandas-udf", `bids.with_column("price", dollar_to_euro(fg.col("price")))`, func(f nexmarkFacts) int64 { return f.bids }},
	{"q2-filter", `bids.filter(fg.col("auction") % 123 == 0).select("auction", "price")`, func(f nexmarkFacts) int64 { return f.q2 }},
	{"count-max-per-auction", `bids.key_by("auction").agg(fg.count().alias("bids"), fg.max("price").alias("top"))`, func(f nexmarkFacts) int64 { return f.auctions }},
}

// BenchmarkNexmark runs Nexmark's q0 (pass-through), q1 (currency
// conversion, here a pandas UDF: price * 0.908), q2 (auction % 123 == 0)
// and a keyed count and max per auction on nexmarkEvents Nexmark-shaped
// events, at parallelism 1 and 2, timed from start to the last row
// (workers' start included). It reports events per second (every event of
// the stream, as Nexmark counts: the source generates persons and
// auctions too) and per CPU second of the runtime and its workers. Flink
// 1.13 published about 155-175 k events/s per core on q0-q2 (Java
// operators, no Python).
//
//	go test -run '^$' -bench Nexmark -benchtime 1x ./integration/bench/
func BenchmarkNexmark(b *testing.B) {
	facts := nexmarkCount(b)
	for _, q := range nexmarkQueries {
		for _, p := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/parallelism=%d", q.name, p), func(b *testing.B) {
				g := nexmarkPlan(b, q.pipeline, p)
				logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
				var elapsed, cpu time.Duration
				for b.Loop() {
					startCPU := cpuTime(b)
					start := time.Now()
					var rows atomic.Int64 // the sink's subtasks call Collect concurrently
					_, err := job.Run(context.Background(), g, job.Options{
						Runner: pluginrunner.Options{Python: testkit.Python(b), Logger: logger},
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
					elapsed += time.Since(start)
					cpu += cpuTime(b) - startCPU
				}
				events := float64(nexmarkEvents) * float64(b.N)
				b.ReportMetric(events/elapsed.Seconds(), "events/s")
				b.ReportMetric(events/cpu.Seconds(), "events/cpu-s")
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
	for _, n := range jp.GetNodes() {
		if n.GetSink() != nil {
			n.Kind = &planpb.Node_Sink{Sink: &planpb.Sink{Kind: &planpb.Sink_Collect{Collect: &planpb.CollectSink{}}}}
		}
	}
	g, err := plan.Plan(jp, plan.Options{})
	if err != nil {
		b.Fatal(err)
	}
	return g
}

// nexmarkFacts are what the queries must return, counted on the
// generator's bids read directly.
type nexmarkFacts struct{ bids, q2, auctions int64 }

func nexmarkCount(b *testing.B) nexmarkFacts {
	src := &planpb.Source{Kind: &planpb.Source_Nexmark{Nexmark: &planpb.NexmarkSource{Kind: planpb.NexmarkSource_BID, Events: nexmarkEvents}}}
	r, err := source.Open(src, source.Config{Schema: source.NexmarkSchema(planpb.NexmarkSource_BID), Parallelism: 1})
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
