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
	"github.com/flinkgo/flinkgo/runtime/rowkind"
	"github.com/flinkgo/flinkgo/udf/bridge/pluginrunner"
)

const joinRows = 200_000 // per side

// BenchmarkRegularJoin runs two datagen streams of joinRows rows each,
// keyed k = id % 50000 (4 rows per key and side), joined on k → collect,
// on the runtime at parallelism 1 and 2 (sources and join), timed from
// start to the last row; rows/s counts both inputs. Every row is stored in
// Pebble and looks up its key's rows of the other side (one range scan).
// The inner join of the two append-only streams emits 16 rows per key; the
// left join also emits a padded row for each left row that comes before
// its key's first right row and retracts it (-D) when that one comes.
//
//	go test -run '^$' -bench RegularJoin -benchtime 1x ./integration/bench/
func BenchmarkRegularJoin(b *testing.B) {
	const keys = 50_000
	for _, how := range []string{"inner", "left"} {
		for _, p := range []int{1, 2} {
			b.Run(fmt.Sprintf("how=%s/parallelism=%d", how, p), func(b *testing.B) {
				dir := b.TempDir()
				b.Setenv("BENCH_PARALLELISM", fmt.Sprint(p))
				jp := testkit.JobPlan(b, fmt.Sprintf(`
import os
import flinkgo as fg

env = fg.Environment(parallelism=int(os.environ["BENCH_PARALLELISM"]))
left = env.datagen(rows=%[1]d, schema={"id": "int64"}).with_column("k", fg.col("id") %% %[2]d)
right = env.datagen(rows=%[1]d, schema={"id": "int64"}).with_column("k", fg.col("id") %% %[2]d)
left.join(right, on="k", how=%[3]q).write_csv(os.path.join(os.environ["FLINKGO_TEST_DIR"], "out"))
plan = env.plan("join-bench")
`, joinRows, keys, how), dir)
				g := collectGraph(b, jp)
				logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
				var elapsed time.Duration
				for b.Loop() {
					start := time.Now()
					var live atomic.Int64 // rows of the applied changelog; the sink's subtasks call Collect concurrently
					_, err := job.Run(context.Background(), g, job.Options{
						Runner:   pluginrunner.Options{Python: testkit.Python(b), Logger: logger},
						StateDir: b.TempDir(),
						Collect: func(_ *plan.Operator, _ int, r arrow.RecordBatch) error {
							kinds := rowkind.KindsOf(r)
							for i := range int(r.NumRows()) {
								if rowkind.At(kinds, i).IsAccumulate() {
									live.Add(1)
								} else {
									live.Add(-1)
								}
							}
							r.Release()
							return nil
						},
					})
					if err != nil {
						b.Fatal(err)
					}
					if want := int64(joinRows/keys) * (joinRows / keys) * keys; live.Load() != want {
						b.Fatalf("%d joined rows, want %d", live.Load(), want)
					}
					elapsed += time.Since(start)
				}
				b.ReportMetric(float64(2*joinRows)*float64(b.N)/elapsed.Seconds(), "rows/s")
			})
		}
	}
}

// BenchmarkIntervalJoin runs two datagen streams of joinRows rows each (ts
// = the row index in ms), each with_watermark(ts, 1 s) and keyed k = id %
// 1000, interval-joined on k with bounds [-1 s, +1 s] → collect, on the
// runtime at parallelism 1 and 2, timed from start to the last row; rows/s
// counts both inputs. A left row matches the right rows of ids id-1000, id
// and id+1000 (those that exist); rows leave the join's buffers as the
// watermark passes their bound.
//
//	go test -run '^$' -bench IntervalJoin -benchtime 1x ./integration/bench/
func BenchmarkIntervalJoin(b *testing.B) {
	const keys = 1000
	for _, p := range []int{1, 2} {
		b.Run(fmt.Sprintf("parallelism=%d", p), func(b *testing.B) {
			dir := b.TempDir()
			b.Setenv("BENCH_PARALLELISM", fmt.Sprint(p))
			jp := testkit.JobPlan(b, fmt.Sprintf(`
import os
import flinkgo as fg

env = fg.Environment(parallelism=int(os.environ["BENCH_PARALLELISM"]))
def side():
    df = env.datagen(rows=%[1]d, schema={"id": "int64", "ts": "timestamp[ms]"})
    return df.with_watermark("ts", "1 s").with_column("k", fg.col("id") %% %[2]d)
side().interval_join(side(), on="k", left_time="ts", right_time="ts", lower="-1 s", upper="1 s").write_csv(
    os.path.join(os.environ["FLINKGO_TEST_DIR"], "out")
)
plan = env.plan("interval-join-bench")
`, joinRows, keys), dir)
			g := collectGraph(b, jp)
			logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
			var elapsed time.Duration
			for b.Loop() {
				start := time.Now()
				var joined atomic.Int64 // the sink's subtasks call Collect concurrently
				_, err := job.Run(context.Background(), g, job.Options{
					Runner:   pluginrunner.Options{Python: testkit.Python(b), Logger: logger},
					StateDir: b.TempDir(),
					Collect: func(_ *plan.Operator, _ int, r arrow.RecordBatch) error {
						joined.Add(r.NumRows())
						r.Release()
						return nil
					},
				})
				if err != nil {
					b.Fatal(err)
				}
				if want := int64(3*joinRows - 2*keys); joined.Load() != want {
					b.Fatalf("%d joined rows, want %d", joined.Load(), want)
				}
				elapsed += time.Since(start)
			}
			b.ReportMetric(float64(2*joinRows)*float64(b.N)/elapsed.Seconds(), "rows/s")
		})
	}
}
