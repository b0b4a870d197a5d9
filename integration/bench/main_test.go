package bench

import (
	"testing"

	"github.com/flinkgo/flinkgo/integration/testkit"
	"github.com/flinkgo/flinkgo/internal/gctune"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
)

// TestMain runs the benchmarks with the GC setting of the flinkgo binary,
// whose runtime they measure in-process, and stops the Kafka broker of
// kafka_bench_test.go if one started.
func TestMain(m *testing.M) {
	gctune.Apply()
	testkit.KafkaMain(m)
}

// collectGraph plans jp with each of its sinks turned into a collect sink,
// so that a benchmark counts what reaches them and writes no files.
func collectGraph(b *testing.B, jp *planpb.JobPlan) *plan.Graph {
	b.Helper()
	for _, n := range jp.GetNodes() {
		if n.GetSink() != nil {
			n.Kind = &planpb.Node_Sink{Sink: &planpb.Sink{Kind: &planpb.Sink_Collect{Collect: &planpb.CollectSink{}}}}
		}
	}
	g, err := plan.PlanWire(jp, plan.Options{})
	if err != nil {
		b.Fatal(err)
	}
	return g
}
