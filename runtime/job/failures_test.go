package job

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/runtime/config"
	"github.com/flinkgo/flinkgo/runtime/plan"
)

// runFailingSink runs datagen → collect whose sink subtask 0 fails its
// first `failures` batches, under a fixed-delay strategy of `restarts` restarts
// and an exception history of `size`.
func runFailingSink(t *testing.T, failures, restarts, size int) (*Job, error) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	g := datagenToCollect(t, 1000)
	g.Config = map[string]string{config.ConfigRestartStrategy: "fixed-delay", config.ConfigFixedDelayAttempts: fmt.Sprint(restarts),
		config.ConfigFixedDelay: "10 ms", config.ConfigExceptionHistorySize: fmt.Sprint(size)}
	var failed atomic.Int64
	j, err := Start(context.Background(), g, Options{Allocator: mem,
		Collect: func(_ *plan.Operator, subtask int, b arrow.RecordBatch) error {
			b.Release()
			if subtask != 0 {
				return nil // one failing subtask: one failure per attempt, numbered in order
			}
			if n := failed.Add(1); n <= int64(failures) {
				return fmt.Errorf("injected sink failure %d", n)
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = j.Wait()
	return j, err
}

// A failure a restart recovered from stays in the job's history, with
// the operator subtask that failed.
func TestFailureHistoryKeepsRecoveredFailures(t *testing.T) {
	j, err := runFailingSink(t, 1, 1, 16)
	if err != nil {
		t.Fatal(err)
	}
	h := j.Failures()
	if len(h.Failures) != 1 || h.Dropped != 0 {
		t.Fatalf("history %+v, want the one recovered failure", h)
	}
	f := h.Failures[0]
	var taskErr *TaskError
	if !f.Restarted || f.Operator != "collect" || f.Subtask != 0 || f.At.IsZero() ||
		!errors.As(f.Err, &taskErr) || f.Err.Error() != `operator "collect" (uid `+taskErr.UID+`, subtask 0): injected sink failure 1` {
		t.Errorf("failure %+v", f)
	}
}

// The failure that ends a job is its history's last, the job's error;
// beyond web.exception-history-size the oldest are dropped and counted.
func TestFailureHistoryIsBounded(t *testing.T) {
	j, err := runFailingSink(t, 100, 3, 2)
	if err == nil {
		t.Fatal("the job did not fail")
	}
	h := j.Failures()
	if len(h.Failures) != 2 || h.Dropped != 2 {
		t.Fatalf("history of %d, %d dropped; want the latest 2 of 4 failures (3 restarts, then the end)", len(h.Failures), h.Dropped)
	}
	restarted, final := h.Failures[0], h.Failures[1]
	if !restarted.Restarted || final.Restarted || final.Err != err {
		t.Errorf("history %+v; the job's error %v", h.Failures, err)
	}
	if final.At.Before(restarted.At) {
		t.Errorf("history not oldest first: %v after %v", restarted.At, final.At)
	}
	for i, want := range []string{"injected sink failure 3", "injected sink failure 4"} {
		if got := h.Failures[i].Err.Error(); !strings.Contains(got, want) {
			t.Errorf("failure %d is %q, want %q", i, got, want)
		}
	}
}
