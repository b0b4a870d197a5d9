package bench

import (
	"testing"

	"github.com/flinkgo/flinkgo/integration/testkit"
	"github.com/flinkgo/flinkgo/internal/gctune"
)

// TestMain runs the benchmarks with the GC setting of the flinkgo binary,
// whose runtime they measure in-process, and stops the Kafka broker of
// kafka_bench_test.go if one started.
func TestMain(m *testing.M) {
	gctune.Apply()
	testkit.KafkaMain(m)
}
