package bundle

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flinkgo/flinkgo/udf/bridge"
)

// Operator is the external-function operator of one subtask: it feeds a
// bridge.Runner with batches, finishes bundles and emits the results in input
// order.
//
// Open, ProcessBatch, FinishBundle, BundleDeadline and Close are called from
// the task goroutine; Cancel from any goroutine. Any error from Open,
// ProcessBatch or FinishBundle has already canceled the operator (the failing
// path is the cancel path); the task should still call Close, which then
// frees what is left and returns the cancel's error.
type Operator struct {
	opts Options
	emit func(bridge.Result) error
	exec Executor
	reb  *Rebatcher

	// life ends with the first Cancel, with its cause; every call's context
	// is tied to it so that Cancel wakes a call blocked on the runner.
	life context.Context
	kill context.CancelCauseFunc

	cancelDone chan struct{} // closed when the first Cancel's teardown ended
	closeDone  chan struct{} // closed when the first Close returned
	closeErr   error         // written before closeDone is closed

	// Task goroutine only.
	nextSeq     int64         // seq of the next batch sent
	nextEmit    int64         // seq of the next result expected
	unflushed   int           // batches sent since the last flush
	bundleRows  int           // rows of the open bundle, sent or buffered
	bundleStart time.Time     // when the open bundle's first row came
	ended       []endedBundle // bundles ended on size or time with results still out, oldest first

	mu struct {
		sync.Mutex
		runner  bridge.Runner // nil after teardown
		closing bool          // Close was called
		cause   error         // set by the first Cancel
	}
}

// NewOperator returns an operator that drives runner and passes every result
// to emit, which owns the result's batch even when it returns an error. An
// error from emit fails the call that emitted. opts is copied; runner and
// emit are required.
func NewOperator(opts Options, runner bridge.Runner, emit func(bridge.Result) error) (*Operator, error) {
	opts = opts.withDefaults() // only zero fields change: negative ones stay invalid
	if err := opts.validate(); err != nil {
		return nil, err
	}
	if runner == nil || emit == nil {
		return nil, fmt.Errorf("bundle: operator %s needs a runner and an emit function", opts.Name)
	}
	reb, err := NewRebatcher(RebatcherConfig{Rows: opts.batchRows(), MaxBytes: opts.MaxBatchBytes, Allocator: opts.Allocator})
	if err != nil {
		return nil, fmt.Errorf("bundle: operator %s: %w", opts.Name, err)
	}
	o := &Operator{
		opts:       opts,
		emit:       emit,
		exec:       opts.Executor,
		reb:        reb,
		cancelDone: make(chan struct{}),
		closeDone:  make(chan struct{}),
	}
	o.life, o.kill = context.WithCancelCause(context.Background())
	o.mu.runner = runner
	return o, nil
}

// Open opens the runner. It blocks until the runner is ready, ctx ends or the
// operator is canceled. Called once.
func (o *Operator) Open(ctx context.Context) error {
	runner, err := o.activeRunner()
	if err != nil {
		return err
	}
	ctx, done := o.callCtx(ctx)
	defer done()
	if err := runner.Open(ctx); err != nil {
		return o.fail(fromRunner(err))
	}
	return nil
}

// ProcessBatch adds the rows of b to the open bundle, sends the batches it
// completes and emits every result already available, so memory stays
// bounded. It finishes the bundle once it holds BundleSize rows (a batch is
// split at that boundary) or BundleTime has passed since its first row. The
// caller keeps ownership of b. It blocks while the runner's window is full
// and while a bundle finishes.
func (o *Operator) ProcessBatch(ctx context.Context, b arrow.RecordBatch) error {
	if _, err := o.activeRunner(); err != nil {
		o.reb.Release()
		return err
	}
	ctx, done := o.callCtx(ctx)
	defer done()
	if err := o.processBatch(ctx, b); err != nil {
		return o.fail(err)
	}
	return nil
}

// FinishBundle finishes every bundle now (checkpoint barrier, watermark,
// end of input, or the BundleDeadline timer): it sends the buffered rows and
// blocks until the runner has flushed and every result is emitted, ctx ends,
// or the operator is canceled, so the in-flight window drains. The exactly-once
// and watermark rules of docs/semantics.md#bundles rest on this: no result of
// a row before the barrier or watermark is still out when it returns. Without
// pending rows or results it returns at once.
func (o *Operator) FinishBundle(ctx context.Context) error {
	if _, err := o.activeRunner(); err != nil {
		o.reb.Release()
		return err
	}
	ctx, done := o.callCtx(ctx)
	defer done()
	if err := o.finishBundle(ctx); err != nil {
		return o.fail(err)
	}
	return nil
}

// BundleDeadline returns when the oldest unfinished bundle must finish by
// time: the open one, or one that ended on size or time and still has results
// out; ok is false when there is none. The task arms a timer with it and calls
// FinishBundle when it fires, so the results of a stream that went idle still
// leave within the bundle time. It does not block.
func (o *Operator) BundleDeadline() (deadline time.Time, ok bool) {
	if len(o.ended) > 0 {
		return o.ended[0].deadline, true // it started before the open one
	}
	return o.openDeadline()
}

// openDeadline is the open bundle's deadline; ok is false when it has no rows.
func (o *Operator) openDeadline() (deadline time.Time, ok bool) {
	if o.bundleRows == 0 {
		return time.Time{}, false
	}
	return o.bundleStart.Add(o.opts.BundleTime), true
}

// Close ends the operator gracefully: it finishes the open bundle, closes the
// runner (which waits for the worker to finish) and shuts the executor down
// in order. It blocks until all of that is done or a Cancel cuts it short.
// Idempotent: a second caller waits for the first (or for its own ctx) and
// gets the same error. After Cancel it only frees buffered input and returns
// an error wrapping the cancel's cause. Afterwards every call returns an
// error wrapping bridge.ErrClosed.
func (o *Operator) Close(ctx context.Context) error {
	o.mu.Lock()
	if o.mu.closing {
		o.mu.Unlock()
		select {
		case <-o.closeDone:
			return o.closeErr
		case <-ctx.Done():
			return o.wrap(fmt.Errorf("wait for close: %w", context.Cause(ctx)))
		}
	}
	o.mu.closing = true
	o.mu.Unlock()

	o.closeErr = o.close(ctx)
	close(o.closeDone)
	return o.closeErr
}

func (o *Operator) close(ctx context.Context) error {
	defer o.reb.Release()
	if cause := o.cancelCause(); cause != nil {
		<-o.cancelDone
		return o.wrap(cause)
	}
	ctx, done := o.callCtx(ctx)
	defer done()
	if err := o.finishBundle(ctx); err != nil {
		return o.fail(err)
	}

	o.mu.Lock()
	runner := o.mu.runner
	o.mu.Unlock()
	var err error
	if runner != nil {
		// A Cancel during Close still reaches the runner through the field,
		// so the field is cleared only once Close returned.
		if cerr := runner.Close(); cerr != nil {
			err = fromRunner(cerr)
		}
	}
	o.clearRunner()
	o.exec.Shutdown()
	if cause := o.cancelCause(); cause != nil {
		<-o.cancelDone
		if err == nil {
			err = cause
		}
	}
	if err != nil {
		return o.wrap(err)
	}
	return nil
}

// Cancel is the canceled-or-failing path: it shuts the executor down now,
// then cancels the runner (bridge.CancelRunner: the runner's Cancel, or Close
// for a runner without one), and wakes a call blocked in the task goroutine,
// which returns an error wrapping cause. It never calls Close on a runner
// that has Cancel, and blocks only as long as the runner's cancel does. A nil
// cause means ErrCanceled. Safe from any goroutine; idempotent: a later call
// waits for the first one's teardown, and the first cause stays.
func (o *Operator) Cancel(cause error) {
	if cause == nil {
		cause = ErrCanceled
	}
	o.mu.Lock()
	if o.mu.cause != nil {
		o.mu.Unlock()
		<-o.cancelDone
		return
	}
	o.mu.cause = cause // before kill: a woken call reports this cause
	runner := o.mu.runner
	o.mu.Unlock()
	defer close(o.cancelDone)

	o.kill(cause)
	o.exec.ShutdownNow()
	if runner != nil {
		bridge.CancelRunner(runner)
	}
	o.clearRunner()
}

// clearRunner drops the operator's reference to the runner, as Flink's
// close() nulls its field. A flush in progress keeps its own reference.
func (o *Operator) clearRunner() {
	o.mu.Lock()
	o.mu.runner = nil
	o.mu.Unlock()
}

// activeRunner returns the runner, or a closed error after Close, Cancel or
// teardown.
func (o *Operator) activeRunner() (bridge.Runner, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.mu.closing {
		return nil, o.closedErrLocked()
	}
	return o.runnerLocked()
}

// runnerLocked returns the runner unless the operator was canceled or torn
// down. Close's own work goes through it, past the closing flag.
func (o *Operator) runnerLocked() (bridge.Runner, error) {
	if o.mu.cause != nil || o.mu.runner == nil {
		return nil, o.closedErrLocked()
	}
	return o.mu.runner, nil
}

func (o *Operator) closedErrLocked() error {
	return &closedError{name: o.opts.Name, cause: o.mu.cause}
}

func (o *Operator) cancelCause() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.mu.cause
}

// callCtx returns a context that ends with ctx or with Cancel, whichever
// comes first, carrying that one's cause.
func (o *Operator) callCtx(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(o.life, func() { cancel(context.Cause(o.life)) })
	return ctx, func() {
		stop()
		cancel(nil)
	}
}

// fail takes the failing path (Cancel with err as the cause) and returns err
// wrapped with the operator's name. When a Cancel came first, its cause is
// the error: what the call saw was only its echo.
func (o *Operator) fail(err error) error {
	if cause := o.cancelCause(); cause != nil {
		err = cause
	}
	o.Cancel(err)
	o.reb.Release()
	return o.wrap(err)
}

// wrap adds the operator's name, once. Errors of the runner pass through:
// the runner names its UDF, operator and subtask itself.
func (o *Operator) wrap(err error) error {
	if _, ok := errors.AsType[*closedError](err); ok {
		return err // names the operator already
	}
	var re *runnerError
	if errors.As(err, &re) && error(re) == err {
		return re.err
	}
	return fmt.Errorf("%s: %w", o.opts.Name, err)
}

// runnerError marks an error returned by the runner, so that wrap passes it
// through instead of naming the operator a second time.
type runnerError struct{ err error }

func fromRunner(err error) error { return &runnerError{err: err} }

func (e *runnerError) Error() string { return e.err.Error() }
func (e *runnerError) Unwrap() error { return e.err }

// closedError is returned for work given after Close or Cancel. It wraps
// bridge.ErrClosed and the cancel's cause, if any.
type closedError struct {
	name  string
	cause error
}

func (e *closedError) Error() string {
	if e.cause != nil {
		return fmt.Sprintf("bundle: operator %s is closed: canceled: %v", e.name, e.cause)
	}
	return fmt.Sprintf("bundle: operator %s is closed", e.name)
}

func (e *closedError) Unwrap() []error {
	if e.cause != nil {
		return []error{bridge.ErrClosed, e.cause}
	}
	return []error{bridge.ErrClosed}
}
