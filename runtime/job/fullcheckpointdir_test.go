package job

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/runtime/config"
)

// A checkpoint directory that stops taking writes mid-job (full, say:
// here every checkpoint after the first finds a file where its directory
// goes) fails each attempt's next checkpoint; with
// tolerable-failed-checkpoints=0 and a fixed-delay strategy of N attempts
// the job restarts N times from the checkpoint it has, then ends FAILED,
// as Flink does, every failure in its exception history with the cause
// and the setting that made it fatal.
func TestCheckpointDirectoryThatStopsTakingWritesEndsTheJobPerTheRestartStrategy(t *testing.T) {
	const restarts = 2
	dir, out := t.TempDir(), t.TempDir()
	jobDir := filepath.Join(dir, "full-dir-job")
	if err := os.MkdirAll(jobDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for id := 2; id <= 500; id++ {
		if err := os.WriteFile(filepath.Join(jobDir, fmt.Sprintf("chk-%d", id)), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	cfg := checkpointConfig(dir, config.ConfigTolerableFailures, "0",
		config.ConfigRestartStrategy, "fixed-delay", config.ConfigFixedDelayAttempts, fmt.Sprint(restarts), config.ConfigFixedDelay, "10 ms")
	j, err := Start(context.Background(), datagenToCSV(t, 0, 1000, 1, 1, out, cfg), Options{Allocator: mem, JobID: "full-dir-job"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = j.Wait()
	if err == nil || j.State() != Failed {
		t.Fatalf("the job ended %s with %v, want FAILED", j.State(), err)
	}
	if got := j.Attempts(); got != restarts+1 {
		t.Errorf("%d attempts, want %d (1 + %d restarts)", got, restarts+1, restarts)
	}
	history := j.Failures().Failures
	if len(history) != restarts+1 {
		t.Fatalf("exception history of %d failures, want %d: %+v", len(history), restarts+1, history)
	}
	for i, f := range history {
		msg := f.Err.Error()
		if !strings.Contains(msg, "chk-") || !strings.Contains(msg, config.ConfigTolerableFailures) {
			t.Errorf("failure %d does not say which checkpoint write failed and why it is fatal: %s", i, msg)
		}
		if f.Restarted != (i < restarts) {
			t.Errorf("failure %d: restarted %v", i, f.Restarted)
		}
	}
}
