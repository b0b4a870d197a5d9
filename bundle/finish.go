package bundle

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flinkgo/flinkgo/udf/bridge"
)

// endedBundle is a bundle that ended on size or time: its batches are sent
// and it finishes when the result of its last one is emitted.
type endedBundle struct {
	end      int64     // seq after its last batch
	deadline time.Time // its first row's time plus BundleTime
}

// endBundle ends the open bundle on size or time without waiting for its
// results: it sends the rows still buffered and records the bundle, which
// finishes once its last result is emitted (finishEnded), while the next
// bundle's batches already go out, so the in-flight window stays full across
// the boundary. Flink's Python operator flushes and waits here; nothing needs
// that wait: a barrier, a watermark, the end of input and close finish every
// bundle themselves (finishBundle), and the runner queues each result as the
// worker answers, without a Flush (bridge.Runner's Process).
func (o *Operator) endBundle(ctx context.Context) error {
	if err := o.sendBuffered(ctx); err != nil {
		return err
	}
	if o.nextEmit < o.nextSeq && o.bundleRows > 0 {
		o.ended = append(o.ended, endedBundle{end: o.nextSeq, deadline: o.bundleStart.Add(o.opts.BundleTime)})
	}
	o.bundleRows = 0
	return nil
}

// finishEnded drops the ended bundles whose results are all emitted.
func (o *Operator) finishEnded() {
	n := 0
	for n < len(o.ended) && o.ended[n].end <= o.nextEmit {
		n++
	}
	if n == len(o.ended) {
		o.ended = o.ended[:0] // reuse the array: a bundle ends every BundleSize rows
		return
	}
	o.ended = o.ended[n:]
}

// finishBundle sends the rows still buffered and finishes every bundle: it
// returns once all results are emitted (a full drain, for barriers,
// watermarks, the end of input, close and the deadline timer).
func (o *Operator) finishBundle(ctx context.Context) error {
	if err := o.sendBuffered(ctx); err != nil {
		return err
	}
	o.bundleRows = 0
	return o.invokeFinishBundle(ctx)
}

// sendBuffered sends the rows the rebatcher holds back as one batch.
func (o *Operator) sendBuffered(ctx context.Context) error {
	rest, err := o.reb.Flush()
	if err != nil {
		return err
	}
	if rest == nil {
		return nil
	}
	return o.sendAll(ctx, []arrow.RecordBatch{rest})
}

// invokeFinishBundle runs the runner's Flush on the executor while this
// goroutine drains and emits results, as Flink's invokeFinishBundle does.
// The flush task wakes the drain with NotifyNoMoreResults however it ends.
func (o *Operator) invokeFinishBundle(ctx context.Context) error {
	if o.unflushed == 0 {
		return nil
	}
	o.mu.Lock()
	runner, err := o.runnerLocked()
	o.mu.Unlock()
	if err != nil {
		return err
	}
	// From here on only the local runner: teardown may clear the field at
	// any time, and this flush must still reach the runner it started on.
	flush := &flushTask{done: make(chan struct{})}
	if err := o.exec.Submit(func() { flush.run(runner) }); err != nil {
		return fmt.Errorf("start flush on %s: %w", flushGoroutine, err)
	}
	if err := o.drain(ctx, runner, flush.done); err != nil {
		return err
	}
	if err := o.emitAvailable(runner); err != nil {
		return err
	}
	if flush.err != nil {
		return fromRunner(flush.err)
	}
	if o.nextEmit != o.nextSeq {
		return fmt.Errorf("flush ended with batches %d to %d without results", o.nextEmit, o.nextSeq-1)
	}
	o.unflushed = 0
	return nil
}

// flushTask is one runner.Flush on the executor. err is written before done
// is closed.
type flushTask struct {
	done chan struct{}
	err  error
}

func (f *flushTask) run(runner bridge.Runner) {
	// Deferred in this order so that done is closed before the wake-up: a
	// drain woken by it always sees the flush as ended.
	defer runner.NotifyNoMoreResults()
	defer close(f.done)
	// The executor's goroutine is no task's: a panic here fails the flush
	// (and so the operator's job), never the process.
	defer func() {
		if r := recover(); r != nil {
			f.err = fmt.Errorf("flushing the bundle: internal error (a bug in flinkgo, please report it with this trace): panic: %v\n%s", r, debug.Stack())
		}
	}()
	f.err = runner.Flush()
}

// drain emits results until the flush has ended and its wake-up arrived. It
// returns early when ctx ends (including by Cancel) or the executor is shut
// down, so a hung flush cannot hold the task goroutine.
func (o *Operator) drain(ctx context.Context, runner bridge.Runner, flushed <-chan struct{}) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		select {
		case <-o.exec.Done():
			cancel(errFlushAbandoned)
		case <-ctx.Done():
		}
	}()
	for {
		res, err := runner.TakeResult(ctx)
		switch {
		case err == nil:
			if err := o.emitResult(res); err != nil {
				return err
			}
		case errors.Is(err, bridge.ErrNoMoreResults):
			select {
			case <-flushed:
				return nil
			default: // not this flush's wake-up: keep draining
			}
		case ctx.Err() != nil:
			return fmt.Errorf("drain results: %w", context.Cause(ctx))
		default:
			return fromRunner(err)
		}
	}
}
