package bridge

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
)

// Result is the output of one input batch.
type Result struct {
	// Seq is the sequence number the input batch was sent with.
	Seq int64
	// Batch holds the chain's output columns, one row per input row. The
	// receiver owns it and must Release it.
	Batch arrow.RecordBatch
}

// Runner runs a fused chain of Python UDFs. Unless a method says otherwise it
// is called from the task goroutine only; Flush runs on the operator's flush
// executor while the task goroutine drains TakeResult, and Cancel may be
// called from any goroutine at any time.
type Runner interface {
	// Open starts the worker and opens the chain. It blocks until the worker
	// is ready, the start timeout passes, or ctx ends. Called once.
	Open(ctx context.Context) error

	// Process sends one batch tagged with seq (strictly increasing). It
	// blocks only while the runner's in-flight window is full: until the
	// worker answers an earlier batch, the runner fails, or ctx ends. The caller keeps ownership of
	// batch; the runner retains what it needs.
	Process(ctx context.Context, seq int64, batch arrow.RecordBatch) error

	// Flush ends the current bundle. It blocks until every batch sent before
	// it has its result queued for TakeResult, or the runner fails. It does
	// not itself deliver results.
	Flush() error

	// TakeResult blocks until a result is queued and returns it. It returns
	// ErrNoMoreResults when it meets the wake-up left by NotifyNoMoreResults
	// (each call of which wakes one TakeResult), the runner's error when the
	// runner failed, and ctx's error when ctx ends first.
	TakeResult(ctx context.Context) (Result, error)

	// TryTakeResult returns a queued result without blocking; ok is false
	// when none is queued. It returns the runner's error when it failed.
	TryTakeResult() (res Result, ok bool, err error)

	// NotifyNoMoreResults leaves a wake-up in the result queue so that a
	// TakeResult blocked in the task goroutine returns ErrNoMoreResults. The
	// flush executor calls it when a flush ends, however it ends. Safe from
	// any goroutine.
	NotifyNoMoreResults()

	// Close ends the chain in order: the worker finishes, then shuts down.
	// It blocks until the worker is gone. Idempotent: a second caller waits
	// for the first and gets its result. After Close, Process fails with
	// ErrClosed.
	Close() error
}

// Canceler is implemented by runners whose Close may block on a stuck worker.
// Cancel aborts streams, fails every pending batch and kills the worker after
// a short grace. It never blocks on the worker: it returns within the grace
// plus the time to reap a killed process. Safe from any goroutine, any number
// of times; after it, Process fails with ErrClosed.
type Canceler interface {
	Cancel()
}

// CancelRunner cancels r: with its own Cancel when it has one, else with
// Close, as Flink's default cancel does. A runner whose Close can block must
// implement Canceler.
func CancelRunner(r Runner) {
	if c, ok := r.(Canceler); ok {
		c.Cancel()
		return
	}
	_ = r.Close()
}
