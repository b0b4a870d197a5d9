package bundle

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/flinkgo/flinkgo/udf/bridge"
	"github.com/flinkgo/flinkgo/udf/bridge/bridgetest"
)

// assertCanceledInOrder checks the cancel path: ShutdownNow before the
// runner's Cancel (or its Close for a runner without Cancel), each once.
func assertCanceledInOrder(t *testing.T, log *bridgetest.CallLog, cancelable bool) {
	t.Helper()
	stop := "runner.Close"
	if cancelable {
		stop = "runner.Cancel"
		if n := log.Count("runner.Close"); n != 0 {
			t.Errorf("runner.Close called %d times on a runner with Cancel; log %v", n, log.Snapshot())
		}
	}
	now, cancel := log.Index("executor.ShutdownNow"), log.Index(stop)
	if now < 0 || cancel < 0 || now > cancel {
		t.Errorf("want executor.ShutdownNow before %s; log %v", stop, log.Snapshot())
	}
	if n := log.Count(stop); n != 1 {
		t.Errorf("%s called %d times, want 1; log %v", stop, n, log.Snapshot())
	}
	if n := log.Count("executor.Shutdown"); n != 0 {
		t.Errorf("orderly executor.Shutdown on the cancel path; log %v", log.Snapshot())
	}
}

func TestCancelWakesFlushBlockedForever(t *testing.T) {
	for _, tc := range []struct {
		name string
		call func(*Operator) error
	}{
		{"FinishBundle", func(op *Operator) error { return op.FinishBundle(context.Background()) }},
		{"Close", func(op *Operator) error { return op.Close(context.Background()) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Options{BatchSize: 4}, true, func(r *bridgetest.Runner) {
				r.BlockFlush = true
				r.HoldUntilFlush = true
			})
			defer h.mem.AssertSize(t, 0)
			if err := h.process(t, 0, 10); err != nil {
				t.Fatal(err)
			}

			errc := make(chan error, 1)
			go func() { errc <- tc.call(h.op) }()
			waitFor(t, h.runner.FlushStarted(), "flush to start")
			go h.op.Cancel(nil) // from another goroutine than the task's
			err := waitFor(t, errc, tc.name+" to return after Cancel")

			if !errors.Is(err, ErrCanceled) {
				t.Fatalf("%s after Cancel: %v, want an error wrapping ErrCanceled", tc.name, err)
			}
			if !strings.Contains(err.Error(), `udf "score"`) {
				t.Errorf("error %q does not name the operator", err)
			}
			h.op.Cancel(nil) // idempotent: waits for the first
			assertCanceledInOrder(t, h.log, true)
			if err := h.op.Close(context.Background()); !errors.Is(err, ErrCanceled) {
				t.Fatalf("Close after Cancel: %v, want ErrCanceled", err)
			}
			if n := h.log.Count("runner.Close"); n != 0 {
				t.Fatalf("runner.Close called after Cancel; log %v", h.log.Snapshot())
			}
		})
	}
}

func TestFailureTakesCancelPath(t *testing.T) {
	errFlush := errors.New("worker said no")
	for _, tc := range []struct {
		name    string
		tweak   func(*bridgetest.Runner)
		failAt  int
		wantErr error
	}{
		{"emit fails", func(r *bridgetest.Runner) { r.HoldUntilFlush = true }, 2, errEmit},
		{"flush fails", func(r *bridgetest.Runner) { r.FlushErr = errFlush }, 0, errFlush},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Options{BatchSize: 4}, true, tc.tweak)
			defer h.mem.AssertSize(t, 0)
			h.out.failAt = tc.failAt
			if err := h.process(t, 0, 10); err != nil {
				t.Fatal(err)
			}
			err := h.op.FinishBundle(context.Background())
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("FinishBundle: %v, want an error wrapping %v", err, tc.wantErr)
			}
			// The operator names itself on its own errors; a runner's error
			// passes through as is (a real runner names its UDF and subtask).
			wantNames := 1
			if tc.wantErr == errFlush {
				wantNames = 0
				if err.Error() != errFlush.Error() {
					t.Errorf("runner error %q was rewrapped", err)
				}
			}
			if got := strings.Count(err.Error(), `udf "score"`); got != wantNames {
				t.Errorf("error %q names the operator %d times, want %d", err, got, wantNames)
			}
			h.op.Cancel(err) // what the failing task does; already done
			assertCanceledInOrder(t, h.log, true)
			if err := h.process(t, 10, 1); !errors.Is(err, bridge.ErrClosed) {
				t.Fatalf("ProcessBatch after failure: %v, want ErrClosed", err)
			}
			if err := h.op.Close(context.Background()); !errors.Is(err, tc.wantErr) {
				t.Fatalf("Close after failure: %v, want the failure", err)
			}
			if n := h.log.Count("runner.Close"); n != 0 {
				t.Fatalf("runner.Close called on the failing path; log %v", h.log.Snapshot())
			}
		})
	}
}

func TestCancelFallsBackToCloseWithoutCanceler(t *testing.T) {
	h := newHarness(t, Options{BatchSize: 4}, false, func(r *bridgetest.Runner) { r.BlockFlush = true })
	defer h.mem.AssertSize(t, 0)
	if err := h.process(t, 0, 8); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- h.op.FinishBundle(context.Background()) }()
	waitFor(t, h.runner.FlushStarted(), "flush to start")
	h.op.Cancel(nil)
	if err := waitFor(t, errc, "FinishBundle to return"); !errors.Is(err, ErrCanceled) {
		t.Fatalf("FinishBundle: %v, want ErrCanceled", err)
	}
	assertCanceledInOrder(t, h.log, false)
	_ = h.op.Close(context.Background())
	if n := h.log.Count("runner.Close"); n != 1 {
		t.Fatalf("runner.Close called %d times, want once (by Cancel)", n)
	}
}

func TestCloseFinishesActiveBundle(t *testing.T) {
	h := newHarness(t, Options{BatchSize: 4}, true, func(r *bridgetest.Runner) { r.HoldUntilFlush = true })
	defer h.mem.AssertSize(t, 0)
	for start := int64(0); start < 10; start += 5 {
		if err := h.process(t, start, 5); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.op.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	seqs, vals := h.out.emitted()
	if !slices.Equal(vals, seq(0, 10)) || !slices.Equal(seqs, seq(0, 3)) {
		t.Fatalf("emitted seqs %v values %v, want every row in order", seqs, vals)
	}
	if got, want := h.runner.ProcessedRows(), []int64{4, 4, 2}; !slices.Equal(got, want) {
		t.Fatalf("runner got batches of %v rows, want %v", got, want)
	}
	lastEmit, closed, shutdown := h.log.LastIndex("emit"), h.log.Index("runner.Close"), h.log.Index("executor.Shutdown")
	if closed < 0 || lastEmit > closed || shutdown < closed {
		t.Fatalf("want every emit, then runner.Close, then executor.Shutdown; log %v", h.log.Snapshot())
	}
	if h.log.Count("executor.ShutdownNow") != 0 || h.log.Count("runner.Cancel") != 0 {
		t.Fatalf("graceful Close took the cancel path; log %v", h.log.Snapshot())
	}
	if err := h.process(t, 10, 1); !errors.Is(err, bridge.ErrClosed) {
		t.Fatalf("ProcessBatch after Close: %v, want ErrClosed", err)
	}
	h.op.Cancel(nil) // after Close: nothing left to cancel
	if n := h.log.Count("runner.Cancel"); n != 0 {
		t.Fatalf("Cancel after Close reached the runner; log %v", h.log.Snapshot())
	}
}

func TestClearRunnerDuringFlushLosesNothing(t *testing.T) {
	h := newHarness(t, Options{BatchSize: 4}, true, func(r *bridgetest.Runner) {
		r.BlockFlush = true
		r.HoldUntilFlush = true
	})
	defer h.mem.AssertSize(t, 0)
	if err := h.process(t, 0, 10); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- h.op.FinishBundle(context.Background()) }()
	waitFor(t, h.runner.FlushStarted(), "flush to start")

	cleared := make(chan struct{})
	go func() {
		h.op.clearRunner() // as teardown may, while the flush runs
		close(cleared)
	}()
	waitFor(t, cleared, "clearRunner")
	h.runner.ReleaseFlush()

	if err := waitFor(t, errc, "FinishBundle"); err != nil {
		t.Fatalf("FinishBundle: %v", err)
	}
	seqs, vals := h.out.emitted()
	if !slices.Equal(vals, seq(0, 10)) || !slices.Equal(seqs, seq(0, 3)) {
		t.Fatalf("emitted seqs %v values %v, want every row in order", seqs, vals)
	}
	if err := h.process(t, 10, 1); !errors.Is(err, bridge.ErrClosed) {
		t.Fatalf("ProcessBatch without a runner: %v, want ErrClosed", err)
	}
	if err := h.op.Close(context.Background()); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

func TestSecondCloseWaitsForFirst(t *testing.T) {
	errClose := errors.New("worker exited with status 3")
	h := newHarness(t, Options{}, true, func(r *bridgetest.Runner) {
		r.BlockClose = true
		r.CloseErr = errClose
	})
	defer h.mem.AssertSize(t, 0)
	if err := h.process(t, 0, 3); err != nil {
		t.Fatal(err)
	}

	first, second := make(chan error, 1), make(chan error, 1)
	go func() { first <- h.op.Close(context.Background()) }()
	waitFor(t, h.runner.CloseStarted(), "runner.Close")
	go func() {
		err := h.op.Close(context.Background())
		if !h.runner.CloseReturned() {
			err = errors.New("second Close returned before the first finished")
		}
		second <- err
	}()
	h.runner.ReleaseClose()

	err1 := waitFor(t, first, "first Close")
	err2 := waitFor(t, second, "second Close")
	if !errors.Is(err1, errClose) {
		t.Fatalf("first Close: %v, want %v", err1, errClose)
	}
	if err2 != err1 {
		t.Fatalf("second Close: %v, want the first's error %v", err2, err1)
	}
	if n := h.log.Count("runner.Close"); n != 1 {
		t.Fatalf("runner.Close called %d times, want 1", n)
	}
	if err := h.op.Close(context.Background()); err != err1 {
		t.Fatalf("third Close: %v, want %v", err, err1)
	}
}

func TestProcessBatchAfterCancel(t *testing.T) {
	h := newHarness(t, Options{}, true, nil)
	defer h.mem.AssertSize(t, 0)
	if err := h.process(t, 0, 3); err != nil {
		t.Fatal(err)
	}
	h.op.Cancel(nil)
	err := h.process(t, 3, 3)
	if !errors.Is(err, bridge.ErrClosed) {
		t.Fatalf("ProcessBatch after Cancel: %v, want an error wrapping bridge.ErrClosed", err)
	}
	if !strings.Contains(err.Error(), `bundle: operator udf "score" (operator 3, subtask 1) is closed`) {
		t.Errorf("error %q does not say which operator is closed", err)
	}
	if err := h.op.FinishBundle(context.Background()); !errors.Is(err, bridge.ErrClosed) {
		t.Fatalf("FinishBundle after Cancel: %v, want ErrClosed", err)
	}
	if err := h.op.Open(context.Background()); !errors.Is(err, bridge.ErrClosed) {
		t.Fatalf("Open after Cancel: %v, want ErrClosed", err)
	}
	if err := h.op.Close(context.Background()); !errors.Is(err, ErrCanceled) {
		t.Fatalf("Close after Cancel: %v", err)
	}
	assertCanceledInOrder(t, h.log, true)
}

func TestCancelWithCause(t *testing.T) {
	cause := errors.New("job canceled by user")
	h := newHarness(t, Options{}, true, func(r *bridgetest.Runner) { r.BlockFlush = true })
	defer h.mem.AssertSize(t, 0)
	if err := h.process(t, 0, 3); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- h.op.FinishBundle(context.Background()) }()
	waitFor(t, h.runner.FlushStarted(), "flush to start")
	h.op.Cancel(cause)
	if err := waitFor(t, errc, "FinishBundle"); !errors.Is(err, cause) || errors.Is(err, ErrCanceled) {
		t.Fatalf("FinishBundle: %v, want an error wrapping the given cause only", err)
	}
	_ = h.op.Close(context.Background())
}

func TestContextEndTakesCancelPath(t *testing.T) {
	h := newHarness(t, Options{}, true, func(r *bridgetest.Runner) { r.BlockFlush = true })
	defer h.mem.AssertSize(t, 0)
	if err := h.process(t, 0, 3); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- h.op.FinishBundle(ctx) }()
	waitFor(t, h.runner.FlushStarted(), "flush to start")
	cancel()
	if err := waitFor(t, errc, "FinishBundle"); !errors.Is(err, context.Canceled) {
		t.Fatalf("FinishBundle: %v, want context.Canceled", err)
	}
	assertCanceledInOrder(t, h.log, true)
	_ = h.op.Close(context.Background())
}
