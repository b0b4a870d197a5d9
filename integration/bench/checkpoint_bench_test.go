package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flinkgo/flinkgo/integration/testkit"
	"github.com/flinkgo/flinkgo/runtime/job"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/udf/bridge/pluginrunner"
)

// BenchmarkCheckpointUnderBackpressure measures checkpoint durations of a
// job under heavy backpressure: a fast datagen rebalanced into a pandas
// UDF that sleeps 1 ms a row (parallelism 2, batches of 200 rows: 0.2 s a
// batch), aligned and unaligned, with a backlog of 4 and of 32 batches
// queued before each UDF subtask (the inbox capacity). An aligned barrier
// waits behind the backlog; an unaligned one overtakes it, which the
// checkpoint stores as channel state. Reported: the median duration of
// the checkpoints after the first (which waits for the workers to start).
func BenchmarkCheckpointUnderBackpressure(b *testing.B) {
	for _, backlog := range []int{4, 32} {
		for _, unaligned := range []bool{false, true} {
			mode := map[bool]string{false: "aligned", true: "unaligned"}[unaligned]
			b.Run(fmt.Sprintf("backlog=%d/%s", backlog, mode), func(b *testing.B) {
				g := backpressuredGraph(b, unaligned)
				var medians []time.Duration
				var persisted int64
				for b.Loop() {
					m, p := checkpointDurations(b, g, backlog)
					medians = append(medians, m)
					persisted = max(persisted, p)
				}
				slices.Sort(medians)
				median := medians[len(medians)/2]
				b.ReportMetric(float64(median.Milliseconds()), "ms/checkpoint")
				b.Logf("FIGURES checkpoint under backpressure: backlog %d batches per UDF subtask, %s: median %s (channel state up to %d bytes)",
					backlog, mode, median.Round(time.Millisecond), persisted)
			})
		}
	}
}

// backpressuredGraph plans the benchmark's job, checkpointing every 100
// ms (one checkpoint at a time: the next starts when one ends).
func backpressuredGraph(b *testing.B, unaligned bool) *plan.Graph {
	dir := b.TempDir()
	return collectGraph(b, testkit.JobPlan(b, fmt.Sprintf(`
import os, time
import flinkgo as fg
from flinkgo import udf

DIR = os.environ["FLINKGO_TEST_DIR"]
env = fg.Environment(parallelism=2, config={
    "execution.checkpointing.interval": "100 ms",
    "execution.checkpointing.dir": os.path.join(DIR, "checkpoints"),
    "execution.checkpointing.unaligned.enabled": %q,
})

@udf("int64", func_type="pandas")
def slow_double(x):
    time.sleep(0.001 * len(x))
    return x * 2

rows = env.datagen(rows=100_000_000, schema={"id": "int64"}).set_parallelism(1)
rows.rebalance().with_column("y", slow_double(fg.col("id"))).write_csv(os.path.join(DIR, "out"))
plan = env.plan("checkpoint-backpressure")
`, fmt.Sprint(unaligned)), dir))
}

// checkpointDurations runs g with inboxes of `backlog` batches until four
// checkpoints completed, and returns the median duration of the last
// three and the most channel state one held.
func checkpointDurations(b *testing.B, g *plan.Graph, backlog int) (time.Duration, int64) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	j, err := job.Start(ctx, g, job.Options{
		Runner:          pluginrunner.Options{Python: testkit.Python(b), Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))},
		ChannelCapacity: backlog, SourceBatchRows: 200, BundleSize: 200,
		Collect: func(_ *plan.Operator, _ int, r arrow.RecordBatch) error { r.Release(); return nil },
	})
	if err != nil {
		b.Fatal(err)
	}
	var durations []time.Duration
	var persisted int64
	for deadline := time.Now().Add(5 * time.Minute); len(durations) < 4; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			b.Fatalf("4 checkpoints did not complete: %+v", j.Checkpoints())
		}
		durations = durations[:0]
		for _, c := range j.Checkpoints() {
			if c.Status == "failed" {
				b.Fatalf("checkpoint %d failed: %v", c.ID, c.Err)
			}
			if c.Status == "completed" {
				durations = append(durations, c.Duration)
				persisted = max(persisted, c.PersistedData)
			}
		}
	}
	cancel()
	if _, err := j.Wait(); !errors.Is(err, context.Canceled) {
		b.Fatalf("canceled job returned %v", err)
	}
	last := slices.Clone(durations[1:4])
	slices.Sort(last)
	return last[1], persisted
}
