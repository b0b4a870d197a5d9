package job

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/internal/logging/logtest"
	"github.com/flinkgo/flinkgo/runtime/config"
	"github.com/flinkgo/flinkgo/runtime/plan"
)

// job.autoscaler.enabled on a job whose UDFs declare no bounds says so
// (nothing is scaled silently or not); the job runs as without it.
func TestAutoscalerWithoutBoundsSaysSo(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	g := datagenToCollect(t, 1000)
	g.Config = map[string]string{config.ConfigAutoscalerEnabled: "true", config.ConfigCheckpointInterval: "1 s",
		config.ConfigCheckpointDir: filepath.Join(t.TempDir(), "chk")}
	var logs logtest.Buffer
	j, err := Start(context.Background(), g, Options{Allocator: mem, Logger: debugLogger(&logs),
		Collect: func(_ *plan.Operator, _ int, b arrow.RecordBatch) error { b.Release(); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Wait(); err != nil {
		t.Fatal(err)
	}
	if n := len(logs.Lines("level=WARN", "no UDF declares concurrency=(min, max): nothing to scale")); n != 1 {
		t.Fatalf("want one warning, got %d:\n%s", n, logs.String())
	}
	if d := j.AutoscalerDecisions(); len(d) != 0 {
		t.Fatalf("decisions %+v", d)
	}
}
