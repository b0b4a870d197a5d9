package bundle

import (
	"bytes"
	"errors"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"
)

func TestFlushExecutorRunsTasksInOrderOneAtATime(t *testing.T) {
	e := NewFlushExecutor()
	var (
		mu      sync.Mutex
		order   []int
		running atomic.Int32
		overlap atomic.Bool
	)
	for i := range 100 {
		err := e.Submit(func() {
			if running.Add(1) > 1 {
				overlap.Store(true)
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			running.Add(-1)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	e.Shutdown()
	if overlap.Load() {
		t.Error("two tasks ran at once")
	}
	for i, v := range order {
		if v != i {
			t.Fatalf("task %d ran at position %d: order %v", v, i, order)
		}
	}
	if len(order) != 100 {
		t.Fatalf("ran %d tasks, want 100: Shutdown must run the queued ones", len(order))
	}
}

func TestFlushExecutorShutdownWaitsForRunningAndQueued(t *testing.T) {
	e := NewFlushExecutor()
	started, release := make(chan struct{}), make(chan struct{})
	var first, second atomic.Bool
	mustSubmit(t, e, func() {
		close(started)
		<-release
		first.Store(true)
	})
	mustSubmit(t, e, func() { second.Store(true) })
	waitFor(t, started, "first task to start")

	returned := make(chan struct{})
	go func() {
		e.Shutdown()
		close(returned)
	}()
	waitFor(t, e.Done(), "Done to close on Shutdown")
	if err := e.Submit(func() {}); !errors.Is(err, ErrExecutorShutdown) {
		t.Fatalf("Submit during Shutdown: got %v, want ErrExecutorShutdown", err)
	}
	close(release)
	waitFor(t, returned, "Shutdown to return")
	if !first.Load() || !second.Load() {
		t.Fatalf("Shutdown returned before its tasks finished: running=%v queued=%v", first.Load(), second.Load())
	}
	e.Shutdown() // idempotent
	e.ShutdownNow()
}

func TestFlushExecutorShutdownNowDoesNotWaitForBlockedTask(t *testing.T) {
	e := NewFlushExecutor()
	started, release := make(chan struct{}), make(chan struct{})
	var dropped atomic.Bool
	mustSubmit(t, e, func() {
		close(started)
		<-release
	})
	mustSubmit(t, e, func() { dropped.Store(true) })
	waitFor(t, started, "task to start")

	returned := make(chan struct{})
	go func() {
		e.ShutdownNow()
		e.ShutdownNow() // idempotent
		e.Shutdown()    // after ShutdownNow: does not wait either
		close(returned)
	}()
	waitFor(t, returned, "ShutdownNow to return while its task is blocked")
	select {
	case <-e.Done():
	default:
		t.Fatal("Done not closed after ShutdownNow")
	}
	if err := e.Submit(func() {}); !errors.Is(err, ErrExecutorShutdown) {
		t.Fatalf("Submit after ShutdownNow: got %v, want ErrExecutorShutdown", err)
	}

	close(release)
	waitFor(t, e.exited, "bundle-flush goroutine to exit once its task returned")
	if dropped.Load() {
		t.Error("a task queued before ShutdownNow ran")
	}
	goleak.VerifyNone(t)
}

func TestFlushExecutorNeverStarted(t *testing.T) {
	e := NewFlushExecutor()
	e.Shutdown() // no goroutine to wait for
	if err := e.Submit(func() {}); !errors.Is(err, ErrExecutorShutdown) {
		t.Fatalf("Submit after Shutdown: got %v, want ErrExecutorShutdown", err)
	}
	goleak.VerifyNone(t)
}

func TestFlushExecutorLabelsItsGoroutine(t *testing.T) {
	e := NewFlushExecutor()
	defer e.Shutdown()
	var profile bytes.Buffer
	done := make(chan struct{})
	mustSubmit(t, e, func() {
		defer close(done)
		_ = pprof.Lookup("goroutine").WriteTo(&profile, 1)
	})
	waitFor(t, done, "task")
	if !strings.Contains(profile.String(), `"goroutine":"bundle-flush"`) {
		t.Fatalf("no goroutine labeled goroutine=bundle-flush in the profile:\n%s", profile.String())
	}
}

func mustSubmit(t *testing.T, e Executor, task func()) {
	t.Helper()
	if err := e.Submit(task); err != nil {
		t.Fatal(err)
	}
}
