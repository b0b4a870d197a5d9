package bench

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/flinkgo/flinkgo/integration/testkit"
	"github.com/flinkgo/flinkgo/runtime/job"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/udf/bridge/pluginrunner"
)

const kafkaRows = 200_000

// BenchmarkKafkaPipeline runs read_kafka (bounded, 2 partitions of JSON
// {"x": float}) → pandas UDF → write_kafka (JSON, 2 partitions) against
// the real broker (testkit.Kafka), with checkpoints every 500 ms, at
// parallelism 1 and 2, exactly-once (a transaction per subtask per
// checkpoint) and at-least-once; timed from job start (worker start
// included) to the last transaction committed.
func BenchmarkKafkaPipeline(b *testing.B) {
	broker := testkit.Kafka(b)
	source := broker.CreateTopic(b, 2)
	recs := make([]*kgo.Record, kafkaRows)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: source, Partition: int32(i % 2), Value: fmt.Appendf(nil, `{"x": %d.5}`, i)}
	}
	broker.Produce(b, recs...)
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	for _, p := range []int{1, 2} {
		for _, delivery := range []string{"exactly-once", "at-least-once"} {
			b.Run(fmt.Sprintf("parallelism=%d/delivery=%s", p, delivery), func(b *testing.B) {
				var elapsed time.Duration
				for b.Loop() {
					target := broker.CreateTopic(b, 2)
					dir := b.TempDir()
					jp := testkit.JobPlan(b, fmt.Sprintf(`
import os
import flinkgo as fg
from flinkgo import udf

@udf("float64", func_type="pandas")
def affine(x):
    return x * 2 + 1

env = fg.Environment(parallelism=%d, config={
    "execution.checkpointing.interval": "500 ms",
    "execution.checkpointing.dir": os.path.join(os.environ["FLINKGO_TEST_DIR"], "checkpoints"),
})
df = env.read_kafka(%q, bootstrap_servers=%q, schema={"x": "float64"}, bounded="latest")
df.with_column("y", affine(fg.col("x"))).write_kafka(
    %q, bootstrap_servers=%q, delivery=%q, transactional_id_prefix="bench-" + %q)
plan = env.plan("kafka-bench")
`, p, source, broker.Addr, target, broker.Addr, delivery, target), dir)
					g, err := plan.PlanWire(jp, plan.Options{})
					if err != nil {
						b.Fatal(err)
					}
					start := time.Now()
					if _, err := job.Run(context.Background(), g, job.Options{
						Runner: pluginrunner.Options{Python: testkit.Python(b), Logger: logger},
					}); err != nil {
						b.Fatal(err)
					}
					elapsed += time.Since(start)
					// The commit markers can trail the job's end by a moment.
					n := 0
					for deadline := time.Now().Add(time.Minute); n < kafkaRows && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
						n = len(broker.Records(b, target, true))
					}
					if n != kafkaRows {
						b.Fatalf("a read_committed reader sees %d records, want %d", n, kafkaRows)
					}
				}
				b.ReportMetric(float64(kafkaRows)*float64(b.N)/elapsed.Seconds(), "rows/s")
			})
		}
	}
}
