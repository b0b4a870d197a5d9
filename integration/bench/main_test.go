package bench

import (
	"os"
	"testing"

	"github.com/flinkgo/flinkgo/internal/gctune"
)

// TestMain runs the benchmarks with the GC setting of the flinkgo binary,
// whose runtime they measure in-process.
func TestMain(m *testing.M) {
	gctune.Apply()
	os.Exit(m.Run())
}
