package operator

import (
	"context"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flinkgo/flinkgo/runtime/checkpoint"
	"github.com/flinkgo/flinkgo/runtime/watermark"
)

// Emit hands a batch downstream and takes ownership of it.
type Emit func(ctx context.Context, b arrow.RecordBatch) error

// Watermark is an event-time watermark in milliseconds since the epoch: no
// row of an earlier or equal event time follows it (package watermark's).
type Watermark = watermark.Watermark

// WatermarkOutput sends what an operator generates itself (a watermark
// assigner's periodic watermark, its idle status) downstream, after every
// batch it emitted before. The task forwards only a watermark greater than
// the last the operator forwarded, and only a change of status.
type WatermarkOutput interface {
	EmitWatermark(ctx context.Context, wm Watermark) error
	EmitStatus(ctx context.Context, s watermark.Status) error
}

// WatermarkGenerator is an Operator that makes its own watermarks and
// statuses (Flink's TimestampsAndWatermarksOperator): the task does not
// pass upstream statuses past it, and its OnWatermark decides which
// upstream watermarks go on (only the maximum one, at the end of input).
type WatermarkGenerator interface {
	Operator
	GeneratesWatermarks()
}

// Operator is one subtask of a non-source operator, driven by its task.
//
// Lifecycle, as Flink's StreamOperator:
//
//	Open → (Process | OnTimer | SnapshotState → TakePersist |
//	        NotifyCheckpointComplete | OnWatermark)* → Finish → Release
//	                          ↘ Cancel (any time, any goroutine) → Release
//
// Every method but Cancel is called from the task goroutine, one at a time:
// an operator needs no lock for what only they touch. Process, Finish,
// OnTimer and SnapshotState may block (a send downstream blocks under
// backpressure; a UDF waits for its worker); each gets the task's ctx,
// which is canceled when the job stops.
//
// Cancel is called from any goroutine, possibly while the task goroutine is
// blocked inside another method, and possibly more than once: it must never
// block on a worker or on the task goroutine, and it must wake a call it
// interrupts. An error from Process, Finish, OnTimer or SnapshotState fails
// the task, which then calls Cancel. Release runs last, exactly once, after
// Finish or Cancel (or after a failed Open, or when the job never started):
// it frees what the operator holds, and must not block on a worker.
//
// Embed Base for the methods an operator does not need.
type Operator interface {
	// Open starts the operator before the first batch (a UDF starts its
	// worker).
	Open(ctx context.Context) error
	// Process handles one batch of input `input` (an index into the
	// operator's inputs, in plan order); the caller keeps b. It may emit
	// any number of batches.
	Process(ctx context.Context, input int, b arrow.RecordBatch, emit Emit) error
	// Finish runs once, when every input has ended: emit what is left.
	// Operators chained together finish upstream first.
	Finish(ctx context.Context, emit Emit) error
	// Deadline is when OnTimer must run next, if ever (a UDF bundle's
	// time, a keyed aggregation's update interval). Asked after every call.
	Deadline() (time.Time, bool)
	// OnTimer runs when Deadline has passed.
	OnTimer(ctx context.Context, emit Emit) error
	// OnWatermark runs when the task's input watermark (the minimum over
	// its input channels, Flink's StatusWatermarkValve) grows, after every
	// batch before it: it emits everything the watermark causes, then
	// returns the watermark to forward downstream (forwarded only when it
	// grew). Base forwards it unchanged. Watermarks are not checkpointed.
	OnWatermark(ctx context.Context, wm Watermark, emit Emit) (Watermark, error)
	// SnapshotState runs when checkpoint target's barrier has reached the
	// operator, after every batch before it: it may emit (what it emits
	// goes before the barrier) and fills its part of st. Keep it short:
	// the task sends the barrier on only after every chained operator
	// snapshotted.
	SnapshotState(ctx context.Context, target checkpoint.Target, emit Emit, st *checkpoint.SubtaskState) error
	// TakePersist returns the asynchronous part of the last snapshot, or
	// nil, as Flink's async snapshot phase: the task runs it on a goroutine
	// of its own while data flows on (it must not touch what the task
	// goroutine changes) and acknowledges the checkpoint when it is done.
	TakePersist() func(ctx context.Context, st *checkpoint.SubtaskState) error
	// NotifyCheckpointComplete runs when checkpoint id completed (a file
	// sink publishes its parts). Idempotent: ids only grow.
	NotifyCheckpointComplete(id int64) error
	// Cancel takes the canceled-or-failing path. It never blocks; safe
	// from any goroutine, idempotent.
	Cancel(cause error)
	// Release frees what the operator holds. Once.
	Release()
}

// Base implements every optional method of Operator as doing nothing (and
// OnWatermark as forwarding). Embed it.
type Base struct{}

func (Base) Open(context.Context) error                                         { return nil }
func (Base) Finish(context.Context, Emit) error                                 { return nil }
func (Base) Deadline() (time.Time, bool)                                        { return time.Time{}, false }
func (Base) OnTimer(context.Context, Emit) error                                { return nil }
func (Base) NotifyCheckpointComplete(int64) error                               { return nil }
func (Base) Cancel(error)                                                       {}
func (Base) Release()                                                           {}
func (Base) TakePersist() func(context.Context, *checkpoint.SubtaskState) error { return nil }

func (Base) OnWatermark(_ context.Context, wm Watermark, _ Emit) (Watermark, error) { return wm, nil }

func (Base) SnapshotState(context.Context, checkpoint.Target, Emit, *checkpoint.SubtaskState) error {
	return nil
}
