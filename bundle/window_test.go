package bundle

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/udf/bridge"
	"github.com/flinkgo/flinkgo/udf/bridge/bridgetest"
)

// windowRunner is a fake bridge.Runner with an in-flight window and a worker
// slower than its sender: a batch is answered only when the window is full
// and the next one is sent (Process blocks for that answer), when
// TakeResult waits for it, or by Flush. It records how many batches were in
// flight once each Process had sent, which shows whether the operator kept
// the window full. Its results are the input batches.
type windowRunner struct {
	window int
	log    *bridgetest.CallLog

	mu       sync.Mutex
	inFlight []bridge.Result // sent, not answered
	queue    []bridge.Result // answered, not taken; a nil Batch is a wake-up
	atSend   []int
	changed  chan struct{}
	closed   bool
}

var _ bridge.Runner = (*windowRunner)(nil)

func newWindowRunner(window int, log *bridgetest.CallLog) *windowRunner {
	return &windowRunner{window: window, log: log, changed: make(chan struct{})}
}

// inFlightAtSend returns the batches in flight after each Process, in order.
func (w *windowRunner) inFlightAtSend() []int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.atSend)
}

func (w *windowRunner) Open(context.Context) error { return nil }

func (w *windowRunner) Process(_ context.Context, seq int64, b arrow.RecordBatch) error {
	w.log.Add("runner.Process")
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return bridge.ErrClosed
	}
	if len(w.inFlight) == w.window {
		w.answerLocked(1)
	}
	b.Retain()
	w.inFlight = append(w.inFlight, bridge.Result{Seq: seq, Batch: b})
	w.atSend = append(w.atSend, len(w.inFlight))
	return nil
}

func (w *windowRunner) Flush() error {
	w.log.Add("runner.Flush")
	w.mu.Lock()
	defer w.mu.Unlock()
	w.answerLocked(len(w.inFlight))
	return nil
}

func (w *windowRunner) TakeResult(ctx context.Context) (bridge.Result, error) {
	for {
		w.mu.Lock()
		if len(w.queue) == 0 && len(w.inFlight) > 0 {
			w.answerLocked(1) // the worker answers while we wait
		}
		if len(w.queue) > 0 {
			res := w.queue[0]
			w.queue = w.queue[1:]
			w.mu.Unlock()
			if res.Batch == nil {
				return bridge.Result{}, bridge.ErrNoMoreResults
			}
			return res, nil
		}
		changed := w.changed
		w.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return bridge.Result{}, ctx.Err()
		}
	}
}

func (w *windowRunner) TryTakeResult() (bridge.Result, bool, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for len(w.queue) > 0 {
		res := w.queue[0]
		w.queue = w.queue[1:]
		if res.Batch != nil {
			return res, true, nil
		}
	}
	return bridge.Result{}, false, nil
}

func (w *windowRunner) NotifyNoMoreResults() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.queue = append(w.queue, bridge.Result{})
	w.changedLocked()
}

func (w *windowRunner) Close() error {
	w.log.Add("runner.Close")
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	for _, r := range slices.Concat(w.inFlight, w.queue) {
		if r.Batch != nil {
			r.Batch.Release()
		}
	}
	w.inFlight, w.queue = nil, nil
	w.changedLocked()
	return nil
}

// answerLocked moves the n oldest batches in flight to the result queue.
func (w *windowRunner) answerLocked(n int) {
	w.queue = append(w.queue, w.inFlight[:n]...)
	w.inFlight = slices.Delete(w.inFlight, 0, n)
	w.changedLocked()
}

func (w *windowRunner) changedLocked() {
	close(w.changed)
	w.changed = make(chan struct{})
}

// newWindowHarness is an operator over a windowRunner of the given window.
func newWindowHarness(t *testing.T, opts Options, window int) (*Operator, *windowRunner, *collector, *memory.CheckedAllocator) {
	t.Helper()
	log := &bridgetest.CallLog{}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	runner := newWindowRunner(window, log)
	out := &collector{log: log}
	opts.Name = `udf "score" (operator 3, subtask 1)`
	opts.Allocator = mem
	op, err := NewOperator(opts, runner, out.emit)
	if err != nil {
		t.Fatal(err)
	}
	if err := op.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	return op, runner, out, mem
}

// processRows gives op one batch of n rows starting at start.
func processRows(t *testing.T, op *Operator, mem memory.Allocator, start, n int64) {
	t.Helper()
	b := makeBatch(t, mem, start, n)
	defer b.Release()
	if err := op.ProcessBatch(context.Background(), b); err != nil {
		t.Fatal(err)
	}
}

// closeAndCheck closes op and checks that rows 0..rows-1 were emitted in
// order.
func closeAndCheck(t *testing.T, op *Operator, out *collector, rows int64) {
	t.Helper()
	if err := op.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, vals := out.emitted(); !slices.Equal(vals, seq(0, rows)) {
		t.Fatalf("emitted %v, want 0..%d in order", vals, rows-1)
	}
}

// A bundle that ends on size does not drain the window: the first batch of
// the next bundle goes out with the window still full.
func TestSizeBoundaryKeepsWindowFull(t *testing.T) {
	const window = 3
	op, runner, out, mem := newWindowHarness(t, Options{BatchSize: 10, BundleSize: 30}, window)
	defer mem.AssertSize(t, 0)

	for start := int64(0); start < 100; start += 10 { // bundles of three batches
		processRows(t, op, mem, start, 10)
	}
	atSend := runner.inFlightAtSend()
	if want := []int{1, 2, 3, 3, 3, 3, 3, 3, 3, 3}; !slices.Equal(atSend, want) {
		t.Fatalf("batches in flight at each send %v, want %v: the first batches of bundles 2, 3 and 4 (sends 4, 7, 10) went out behind a drained window", atSend, want)
	}
	if got := slices.Max(atSend); got != window {
		t.Fatalf("at most %d batches in flight, want the window %d", got, window)
	}
	if n := runner.log.Count("runner.Flush"); n != 0 {
		t.Fatalf("%d flushes across size boundaries, want 0", n)
	}
	if seqs, _ := out.emitted(); !slices.Equal(seqs, seq(0, 10-window)) {
		t.Fatalf("emitted results %v before close, want 0..%d: each answer leaves as the next batch goes out", seqs, 10-window-1)
	}
	if err := op.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	seqs, vals := out.emitted()
	if !slices.Equal(vals, seq(0, 100)) || !slices.Equal(seqs, seq(0, 10)) {
		t.Fatalf("emitted seqs %v values %v, want batches 0..9 and rows 0..99 in order", seqs, vals)
	}
}

// FinishBundle (a barrier, a watermark, the end of input) still drains the
// window: every result is out when it returns, and the next batch goes out
// alone.
func TestFinishBundleDrainsWindow(t *testing.T) {
	op, runner, out, mem := newWindowHarness(t, Options{BatchSize: 10, BundleSize: 20}, 3)
	defer mem.AssertSize(t, 0)

	processRows(t, op, mem, 0, 45) // two bundles end on size, 5 rows stay open
	if err := op.FinishBundle(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, vals := out.emitted(); !slices.Equal(vals, seq(0, 45)) {
		t.Fatalf("emitted %v after FinishBundle, want every row 0..44", vals)
	}
	if _, ok := op.BundleDeadline(); ok {
		t.Fatal("a deadline after FinishBundle emitted every result")
	}
	processRows(t, op, mem, 45, 10)
	if got, want := runner.inFlightAtSend(), []int{1, 2, 3, 3, 3, 1}; !slices.Equal(got, want) {
		t.Fatalf("batches in flight at each send %v, want %v", got, want)
	}
	if n := runner.log.Count("runner.Flush"); n != 1 {
		t.Fatalf("%d flushes, want 1", n)
	}
	closeAndCheck(t, op, out, 55)
}

// A bundle that ends on time does not drain the window either.
func TestTimeBoundaryKeepsWindowFull(t *testing.T) {
	clock := &fakeClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	op, runner, out, mem := newWindowHarness(t, Options{BatchSize: 10, BundleTime: time.Second, Now: clock.Now}, 2)
	defer mem.AssertSize(t, 0)

	for start := int64(0); start < 50; start += 10 {
		processRows(t, op, mem, start, 10)
		clock.advance(time.Second) // the open bundle ends on time with the next batch
	}
	if got, want := runner.inFlightAtSend(), []int{1, 2, 2, 2, 2}; !slices.Equal(got, want) {
		t.Fatalf("batches in flight at each send %v, want %v", got, want)
	}
	if n := runner.log.Count("runner.Flush"); n != 0 {
		t.Fatalf("%d flushes across time boundaries, want 0", n)
	}
	closeAndCheck(t, op, out, 50)
}
