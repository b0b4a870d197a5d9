package pluginrunner_test

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/flinkgo/flinkgo/integration/testkit"
	"github.com/flinkgo/flinkgo/internal/poll"
	"github.com/flinkgo/flinkgo/udf/bridge"
	"github.com/flinkgo/flinkgo/udf/bridge/pluginrunner"
	"github.com/flinkgo/flinkgo/udf/bridge/proto/workerpb"
)

func TestPooledWorkerServesTheNextRunnerOnlyAfterAnOrderlyClose(t *testing.T) {
	eachWorker(t, testPooledWorkerReuse)
}

func testPooledWorkerReuse(t *testing.T, w worker) {
	f := newFixture(t, w)
	pool := pluginrunner.NewPool(nil)
	defer pool.Close()
	pooled := func(call *workerpb.UdfCall) pluginrunner.Options {
		o := f.options(int64Schema, call)
		o.Pool, o.IdleTimeout, o.MaxIdle = pool, time.Hour, 4
		return o
	}
	run := func(r *pluginrunner.Runner, values ...int64) error {
		b := f.int64Batch(values...)
		defer b.Release()
		if err := r.Process(context.Background(), 0, b); err != nil {
			return err
		}
		results, err := flushAndTake(t, r)
		for _, res := range results {
			res.Batch.Release()
		}
		return err
	}

	first := f.open(pooled(testkit.Call(f.specs["plus_one"], "y", "x")))
	pid := first.Pid()
	if err := run(first, 1, 2, 3); err != nil {
		t.Fatal(err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	if pool.Idle() != 1 || !alive(pid) {
		t.Fatalf("after an orderly close: %d idle, worker alive %v; want it idle", pool.Idle(), alive(pid))
	}

	// Another chain on the same worker: reused, and out of the pool meanwhile.
	second := f.open(pooled(testkit.Call(f.specs["boom"], "y", "x")))
	if second.Pid() != pid {
		t.Fatalf("second runner's worker is %d, want the idle %d", second.Pid(), pid)
	}
	if pool.Idle() != 0 {
		t.Fatalf("a worker in use is still idle in the pool")
	}
	if err := run(second, 1, 2); err != nil {
		t.Fatalf("a reused worker failed: %v", err)
	}
	// It fails now: the operator takes the cancel path, and the worker is
	// stopped, never given back.
	if err := run(second, 3); err == nil {
		t.Fatal("boom on 3 did not fail")
	}
	second.Cancel()
	_ = second.Close()
	if pool.Idle() != 0 {
		t.Fatal("a failed runner gave its worker back")
	}
	waitGone(t, pid)

	third := f.open(pooled(testkit.Call(f.specs["plus_one"], "y", "x")))
	defer third.Cancel()
	if third.Pid() == pid {
		t.Fatal("a failed worker was reused")
	}
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

// waitGone waits until process pid has been reaped.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	poll.Until(t, 30*time.Second, "worker "+strconv.Itoa(pid)+" to be reaped", func() bool { return !alive(pid) })
}

// A worker that reported a UDF's exception ends its batch stream; that end
// is the failure's consequence, not a lost worker: the user gets the
// exception, and no warning about the worker besides it.
func TestUDFExceptionLogsNoLostWorker(t *testing.T) {
	eachWorker(t, func(t *testing.T, w worker) {
		f := newFixture(t, w)
		var logs syncBuffer
		opts := f.options(int64Schema, testkit.Call(f.specs["boom"], "y", "x"))
		opts.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
		r := f.open(opts)
		for seq, values := range [][]int64{{3}, {1}, {2}} { // unread batches after the failure
			b := f.int64Batch(values...)
			_ = r.Process(context.Background(), int64(seq), b)
			b.Release()
		}
		results, err := flushAndTake(t, r)
		for _, res := range results {
			res.Batch.Release()
		}
		var udfErr *bridge.UDFError
		if !errors.As(err, &udfErr) {
			t.Fatalf("want the UDF's exception, got %v", err)
		}
		r.Cancel()
		if out := logs.String(); out != "" {
			t.Errorf("warnings beside the UDF's exception:\n%s", out)
		}
	})
}

// A worker stopped (SIGSTOP) or hung while it waits idle in the pool
// answers no shutdown request: closing the pool kills it rather than wait on
// it (go-plugin's graceful Kill alone waits for an exit that never comes).
func TestPoolCloseDoesNotWaitOnAStoppedIdleWorker(t *testing.T) {
	eachWorker(t, testPoolCloseDoesNotWaitOnAStoppedIdleWorker)
}

func testPoolCloseDoesNotWaitOnAStoppedIdleWorker(t *testing.T, w worker) {
	f := newFixture(t, w)
	pool := pluginrunner.NewPool(nil)
	o := f.options(int64Schema, testkit.Call(f.specs["plus_one"], "y", "x"))
	o.Pool, o.IdleTimeout, o.MaxIdle = pool, time.Hour, 4
	r := f.open(o)
	pid := r.Pid()
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if pool.Idle() != 1 {
		t.Fatalf("%d idle workers after an orderly close, want 1", pool.Idle())
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	closed := make(chan struct{})
	go func() { pool.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(30 * time.Second): // hang guard, not a timing
		_ = syscall.Kill(pid, syscall.SIGKILL)
		t.Fatal("Pool.Close waited on a stopped worker")
	}
	waitGone(t, pid)
}
