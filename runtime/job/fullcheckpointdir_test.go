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
	j := runOnAFullCheckpointDir(t, config.ConfigRestartStrategy, "fixed-delay", config.ConfigFixedDelayAttempts, fmt.Sprint(restarts), config.ConfigFixedDelay, "10 ms")
	checkEndedAfterRestarts(t, j, restarts, config.ConfigFixedDelayAttempts)
}

// The same with the default restart strategy of a checkpointed job
// (exponential-delay, whose waits alone are shortened here): Flink's
// default restarts such a job forever (its attempts are unbounded); ours
// ends it FAILED after restart-strategy.exponential-delay.attempts (10)
// restarts, with an error that says the restarts ran out, which key bounds
// them, and to look at the checkpoint storage.
func TestCheckpointDirectoryThatStopsTakingWritesEndsTheJobUnderTheDefaultRestartStrategy(t *testing.T) {
	j := runOnAFullCheckpointDir(t, config.ConfigExponentialInitialBackoff, "1 ms", config.ConfigExponentialMaxBackoff, "2 ms")
	checkEndedAfterRestarts(t, j, 10, config.ConfigExponentialAttempts)
}

// runOnAFullCheckpointDir runs a checkpointed job whose checkpoint
// directory takes its first checkpoint only (a file stands where each
// later one's directory goes) with tolerable-failed-checkpoints=0 and the
// restart settings given, to its end.
func runOnAFullCheckpointDir(t *testing.T, restart ...string) *Job {
	t.Helper()
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
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	cfg := checkpointConfig(dir, append([]string{config.ConfigTolerableFailures, "0"}, restart...)...)
	j, err := Start(context.Background(), datagenToCSV(t, 0, 1000, 1, 1, out, cfg), Options{Allocator: mem, JobID: "full-dir-job"})
	if err != nil {
		t.Fatal(err)
	}
	_, _ = j.Wait()
	return j
}

// checkEndedAfterRestarts checks that j ended FAILED after restarts
// restarts, each failure in its exception history naming the checkpoint
// write that failed and the setting that made it fatal, the last also the
// restart strategy's bound (key).
func checkEndedAfterRestarts(t *testing.T, j *Job, restarts int, key string) {
	t.Helper()
	_, err := j.Wait()
	if err == nil || j.State() != Failed {
		t.Fatalf("the job ended %s with %v, want FAILED", j.State(), err)
	}
	t.Logf("the job ended with: %v", err)
	if got := j.Attempts(); got != restarts+1 {
		t.Errorf("%d attempts, want %d (1 + %d restarts)", got, restarts+1, restarts)
	}
	for _, want := range []string{fmt.Sprintf("after %d restarts", restarts), key, config.ConfigCheckpointDir, config.ConfigTolerableFailures, "chk-"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the job's error does not say %q: %v", want, err)
		}
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
	if last := history[len(history)-1].Err.Error(); !strings.Contains(last, key) {
		t.Errorf("the exception history's last failure does not say the restarts ran out: %s", last)
	}
}
