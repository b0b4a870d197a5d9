package bench

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flinkgo/flinkgo/integration/testkit"
	"github.com/flinkgo/flinkgo/runtime/job"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/udf/bridge/pluginrunner"
)

const windowRows = 5_000_000

// BenchmarkKeyedTumblingCount runs datagen (ts = the row index in ms) →
// k = id % 100 → key_by(k).window(tumble(ts, 10 s)).agg(count) → collect
// on the runtime at parallelism 1 and 2 (source and window), timed from
// start to the last window row. Without a watermark assigner upstream, the
// end of input's maximum watermark fires every window: each row is one
// slice update, each of the 50,000 (key, window) pairs one timer.
//
//	go test -run '^$' -bench KeyedTumblingCount -benchtime 1x ./integration/bench/
func BenchmarkKeyedTumblingCount(b *testing.B) {
	for _, p := range []int{1, 2} {
		b.Run(fmt.Sprintf("parallelism=%d", p), func(b *testing.B) {
			dir := b.TempDir()
			b.Setenv("BENCH_PARALLELISM", fmt.Sprint(p))
			jp := testkit.JobPlan(b, fmt.Sprintf(`
import os
import flinkgo as fg

env = fg.Environment(parallelism=int(os.environ["BENCH_PARALLELISM"]))
df = env.datagen(rows=%d, schema={"id": "int64", "ts": "timestamp[ms]"})
df = df.with_column("k", fg.col("id") %% 100)
df.key_by("k").window(fg.tumble("ts", "10 s")).agg(fg.count()).write_csv(
    os.path.join(os.environ["FLINKGO_TEST_DIR"], "out")
)
plan = env.plan("window-bench")
`, windowRows), dir)
			g := collectGraph(b, jp)
			logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
			var elapsed time.Duration
			for b.Loop() {
				start := time.Now()
				var windows atomic.Int64 // the sink's subtasks call Collect concurrently
				_, err := job.Run(context.Background(), g, job.Options{
					Runner: pluginrunner.Options{Python: testkit.Python(b), Logger: logger},
					Collect: func(_ *plan.Operator, _ int, r arrow.RecordBatch) error {
						windows.Add(r.NumRows())
						r.Release()
						return nil
					},
				})
				if err != nil {
					b.Fatal(err)
				}
				if want := int64(windowRows / 10_000 * 100); windows.Load() != want {
					b.Fatalf("%d window rows, want %d", windows.Load(), want)
				}
				elapsed += time.Since(start)
			}
			b.ReportMetric(float64(windowRows)*float64(b.N)/elapsed.Seconds(), "rows/s")
		})
	}
}
