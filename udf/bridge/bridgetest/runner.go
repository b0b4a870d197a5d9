package bridgetest

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flinkgo/flinkgo/udf/bridge"
)

// Runner is a fake bridge.Runner. Set its knobs before the code under test
// uses it; they are not synchronized.
type Runner struct {
	// Transform scripts the result of each batch. It returns the result
	// batch (the runner owns it) or an error, which fails the runner as a
	// UDF error does: Process returns nil, and that error comes out of the
	// next call. Default: the result is the input batch itself.
	Transform func(seq int64, batch arrow.RecordBatch) (arrow.RecordBatch, error)
	// HoldUntilFlush queues results only when Flush runs, as a worker that
	// answers late; otherwise Process queues them.
	HoldUntilFlush bool
	// BlockFlush makes Flush wait for ReleaseFlush, or for Close, Cancel or
	// Fail.
	BlockFlush bool
	// FlushErr is what Flush returns (after it blocked, if it does).
	FlushErr error
	// BlockClose makes Close wait for ReleaseClose.
	BlockClose bool
	// CloseErr is what Close returns.
	CloseErr error

	log          *CallLog
	releaseFlush chan struct{}
	releaseClose chan struct{}
	releaseOnce  [2]sync.Once
	flushStarted chan struct{}
	closeStarted chan struct{}
	stopped      chan struct{} // closed by the first Close, Cancel or Fail
	stopOnce     sync.Once
	closeOnce    sync.Once

	mu        sync.Mutex
	rows      []int64 // rows of every Process call
	held      []bridge.Result
	queue     []queued
	changed   chan struct{} // closed and replaced on every change of queue or failed
	failed    error
	closeDone bool // Close has returned
}

type queued struct {
	res  bridge.Result
	wake bool // left by NotifyNoMoreResults
}

// startedSignals is how many Flush or Close starts are kept for a test that
// has not read them yet; later ones are dropped rather than block.
const startedSignals = 64

// NewRunner returns a runner that records its calls in log (a new log when
// log is nil).
func NewRunner(log *CallLog) *Runner {
	if log == nil {
		log = &CallLog{}
	}
	return &Runner{
		log:          log,
		releaseFlush: make(chan struct{}),
		releaseClose: make(chan struct{}),
		flushStarted: make(chan struct{}, startedSignals),
		closeStarted: make(chan struct{}, startedSignals),
		stopped:      make(chan struct{}),
		changed:      make(chan struct{}),
	}
}

var _ bridge.Runner = (*Runner)(nil)

// Log is the runner's call log.
func (f *Runner) Log() *CallLog { return f.log }

// FlushStarted delivers one value each time Flush starts.
func (f *Runner) FlushStarted() <-chan struct{} { return f.flushStarted }

// CloseStarted delivers one value each time Close starts.
func (f *Runner) CloseStarted() <-chan struct{} { return f.closeStarted }

// ReleaseFlush lets every blocked and later Flush go on. Idempotent.
func (f *Runner) ReleaseFlush() { f.releaseOnce[0].Do(func() { close(f.releaseFlush) }) }

// ReleaseClose lets every blocked and later Close go on. Idempotent.
func (f *Runner) ReleaseClose() { f.releaseOnce[1].Do(func() { close(f.releaseClose) }) }

// ProcessedRows returns the row count of every batch given to Process, in
// order.
func (f *Runner) ProcessedRows() []int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.rows)
}

// CloseReturned reports whether a Close has returned.
func (f *Runner) CloseReturned() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.closeDone
}

// Fail breaks the runner as a lost worker does: every waiter and later call
// returns err, and queued results are dropped. Only the first failure,
// Close or Cancel counts. Safe from any goroutine.
func (f *Runner) Fail(err error) { f.stop(err) }

// Open records the call.
func (f *Runner) Open(context.Context) error {
	f.log.Add("runner.Open")
	return nil
}

// Process queues (or holds) the batch's result; see Transform.
func (f *Runner) Process(_ context.Context, seq int64, b arrow.RecordBatch) error {
	f.log.Add("runner.Process")
	f.mu.Lock()
	if f.failed != nil {
		defer f.mu.Unlock()
		return f.failed
	}
	f.rows = append(f.rows, b.NumRows())
	f.mu.Unlock()

	out, err := f.result(seq, b)
	if err != nil {
		f.stop(err)
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	res := bridge.Result{Seq: seq, Batch: out}
	if f.failed != nil {
		out.Release()
		return f.failed
	}
	if f.HoldUntilFlush {
		f.held = append(f.held, res)
		return nil
	}
	f.queue = append(f.queue, queued{res: res})
	f.changedLocked()
	return nil
}

func (f *Runner) result(seq int64, b arrow.RecordBatch) (arrow.RecordBatch, error) {
	if f.Transform != nil {
		return f.Transform(seq, b)
	}
	b.Retain()
	return b, nil
}

// Flush queues the held results; see BlockFlush and FlushErr.
func (f *Runner) Flush() error {
	f.log.Add("runner.Flush")
	select {
	case f.flushStarted <- struct{}{}:
	default:
	}
	if f.BlockFlush {
		select {
		case <-f.releaseFlush:
		case <-f.stopped:
			f.mu.Lock()
			defer f.mu.Unlock()
			return fmt.Errorf("fake flush: %w", f.failed)
		}
	}
	if f.FlushErr != nil {
		return f.FlushErr
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failed != nil {
		return f.failed
	}
	for _, r := range f.held {
		f.queue = append(f.queue, queued{res: r})
	}
	f.held = nil
	f.changedLocked()
	return nil
}

// TakeResult blocks for the next result or wake-up; see bridge.Runner.
func (f *Runner) TakeResult(ctx context.Context) (bridge.Result, error) {
	for {
		f.mu.Lock()
		if f.failed != nil {
			f.mu.Unlock()
			return bridge.Result{}, f.failed
		}
		if len(f.queue) > 0 {
			q := f.queue[0]
			f.queue = f.queue[1:]
			f.mu.Unlock()
			if q.wake {
				return bridge.Result{}, bridge.ErrNoMoreResults
			}
			return q.res, nil
		}
		changed := f.changed
		f.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return bridge.Result{}, ctx.Err()
		}
	}
}

// TryTakeResult returns a queued result without blocking; wake-ups are
// skipped, as they are for TakeResult only.
func (f *Runner) TryTakeResult() (bridge.Result, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failed != nil {
		return bridge.Result{}, false, f.failed
	}
	for len(f.queue) > 0 {
		q := f.queue[0]
		f.queue = f.queue[1:]
		if !q.wake {
			return q.res, true, nil
		}
	}
	return bridge.Result{}, false, nil
}

// NotifyNoMoreResults leaves a wake-up for TakeResult.
func (f *Runner) NotifyNoMoreResults() {
	f.log.Add("runner.NotifyNoMoreResults")
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failed != nil {
		return
	}
	f.queue = append(f.queue, queued{wake: true})
	f.changedLocked()
}

// Close fails later calls with bridge.ErrClosed, frees pending results and
// returns CloseErr; see BlockClose. Every call is logged; a second caller
// waits for the first and gets its result, as the contract says.
func (f *Runner) Close() error {
	f.log.Add("runner.Close")
	select {
	case f.closeStarted <- struct{}{}:
	default:
	}
	f.closeOnce.Do(func() {
		f.stop(bridge.ErrClosed)
		if f.BlockClose {
			<-f.releaseClose
		}
		f.mu.Lock()
		f.closeDone = true
		f.mu.Unlock()
	})
	return f.CloseErr
}

// stop fails every later call with err and frees the pending results.
func (f *Runner) stop(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failed == nil {
		f.failed = err
	}
	f.stopOnce.Do(func() { close(f.stopped) })
	for _, q := range f.queue {
		if !q.wake {
			q.res.Batch.Release()
		}
	}
	for _, r := range f.held {
		r.Batch.Release()
	}
	f.queue, f.held = nil, nil
	f.changedLocked()
}

func (f *Runner) changedLocked() {
	close(f.changed)
	f.changed = make(chan struct{})
}

// Cancelable is a Runner with bridge.Canceler: Cancel fails every later call
// with an error wrapping bridge.ErrClosed, without calling Close.
type Cancelable struct{ *Runner }

var (
	_ bridge.Runner   = Cancelable{}
	_ bridge.Canceler = Cancelable{}
)

// Cancel records the call and stops the runner.
func (c Cancelable) Cancel() {
	c.log.Add("runner.Cancel")
	c.stop(fmt.Errorf("fake runner canceled: %w", bridge.ErrClosed))
}
