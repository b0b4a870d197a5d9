package task

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flinkgo/flinkgo/runtime/checkpoint"
	"github.com/flinkgo/flinkgo/runtime/connector"
	"github.com/flinkgo/flinkgo/runtime/ident"
	"github.com/flinkgo/flinkgo/runtime/metrics"
	"github.com/flinkgo/flinkgo/runtime/operator"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/runtime/watermark"
	"github.com/flinkgo/flinkgo/state"
)

// Coordinator is the checkpoint coordinator as a task sees it (package
// checkpoint's Coordinator).
type Coordinator interface {
	// Target returns what checkpoint id is for, false once the coordinator
	// gave it up.
	Target(id int64) (checkpoint.Target, bool)
	// Acknowledge hands the task's answer over; it blocks until taken or
	// ctx ends.
	Acknowledge(ctx context.Context, a checkpoint.Ack) error
}

// Task is one subtask of a chain of operators and its goroutine: the
// chain's head reads its inbox (or its source) and hands its batches to the
// operators chained to it by function call.
type Task struct {
	subtask int
	head    *link
	links   []*link // the chain, head first, in topological order
	in      *inbox
	valve   *watermark.Valve // over the inbox's producers; nil for a source
	reader  connector.Reader // a source head's
	coord   Coordinator
	// log names the chain's head subtask (ident.Subtask); its lifecycle
	// (running, finished, failed, canceled) is logged there.
	log *slog.Logger
	// metrics counts the task's records, bytes and time (Flink's task
	// metrics); it outlives the attempt.
	metrics *metrics.Task

	// Set from other goroutines (see barrier.go): the latest barrier a
	// source is asked to send, the latest completed checkpoint, a wake-up
	// for both, and whether the task has finished its input.
	barrierRequest atomic.Int64
	completed      atomic.Int64
	signal         chan struct{}
	finished       atomic.Bool
	// committedUpTo is the latest completion the task has acted on (its
	// sinks committed); stopping makes a source stop reading (a stop with
	// savepoint).
	committedUpTo atomic.Int64
	stopping      atomic.Bool
	// ending makes a source end its stream now, as at the end of its
	// data (a limit downstream has passed its rows).
	ending atomic.Bool
	// persisting counts the goroutines writing snapshots out (barrier.go).
	persisting sync.WaitGroup

	// Task goroutine only.
	lastBarrier int64 // the latest checkpoint this task snapshotted or gave up
	committed   int64 // the latest completion acted on
	align       alignment
	ended       []bool // producers whose stream ended
	endedCount  int
}

// link is one operator of a task's chain.
type link struct {
	op      *plan.Operator
	subtask int
	// id names the operator subtask in log lines and errors.
	id       ident.Subtask
	proc     operator.Operator // nil for a source
	count    *operator.Counters
	task     *metrics.Task // the task's metrics, shared by its chain
	children []*link       // operators chained to this one
	outs     outputs       // edges leaving the chain
	// fromOutput is the output of its parent in the chain that l reads
	// (plan.Edge.FromOutput).
	fromOutput int
	// wmIn is the last watermark given to the operator, wmOut the last it
	// forwarded, status the last status forwarded (watermark.go).
	wmIn, wmOut watermark.Watermark
	status      watermark.Status
	// namesOrigin is Config.ErrorNamesOrigin (nil: no error does).
	namesOrigin func(error) bool
}

// isChained reports whether op runs in the task of an upstream operator.
func isChained(g *plan.Graph, op int) bool {
	in := g.Inputs(op)
	return len(in) == 1 && g.Operators[in[0].From].ChainID == g.Operators[op].ChainID
}

// build builds subtask i of the chain that starts at head.
func build(bc *buildContext, head *plan.Operator, i int) (*Task, error) {
	g := bc.Graph
	in := bc.inboxes[head.ID][i]
	t := &Task{subtask: i, in: in, signal: make(chan struct{}, 1), ended: make([]bool, in.producers), metrics: metrics.NewTask()}
	if bc.TaskMetrics != nil {
		t.metrics = bc.TaskMetrics[head.ID][i]
	}
	in.bytes, in.peak = &t.metrics.InputQueueBytes, &t.metrics.InputQueuePeakBytes
	if in.producers > 0 {
		t.valve = watermark.NewValve(in.producers)
	}
	var add func(op *plan.Operator, fromOutput int) (*link, error)
	add = func(op *plan.Operator, fromOutput int) (*link, error) {
		l := &link{op: op, subtask: i, count: &bc.Counters[op.ID], task: t.metrics, outs: bc.outs[op.ID][i], namesOrigin: bc.ErrorNamesOrigin,
			fromOutput: fromOutput, wmIn: watermark.MinWatermark, wmOut: watermark.MinWatermark,
			id: ident.Subtask{Job: bc.JobID, Attempt: bc.Attempt, Vertex: head.ID, Operator: op.Name, UID: op.UID, Index: i}}
		t.links = append(t.links, l)
		if err := t.build(bc, l); err != nil {
			return nil, fmt.Errorf("%s: %w", l.id, err)
		}
		for _, e := range g.Outputs(op.ID) {
			if isChained(g, e.To) {
				child, err := add(g.Operators[e.To], e.FromOutput)
				if err != nil {
					return nil, err
				}
				l.children = append(l.children, child)
			}
		}
		return l, nil
	}
	var err error
	t.head, err = add(head, plan.MainOutput)
	if err == nil {
		err = t.restoreChannels(bc)
	}
	if err != nil {
		t.Release()
		return nil, err
	}
	t.log = bc.Logger.With(ident.Attr(t.head.id))
	return t, nil
}

// readsSourceBatches reports whether op is chained to a source through
// selects and filters only, which emit only inside Process: every batch op
// processes then comes from the batch the source read last.
func readsSourceBatches(g *plan.Graph, op int) bool {
	for isChained(g, op) {
		up := g.Operators[g.Inputs(op)[0].From]
		switch up.Kind {
		case plan.KindSource:
			return true
		case plan.KindSelect, plan.KindFilter:
			op = up.ID
		default:
			return false
		}
	}
	return false
}

// build makes l's operator (or the task's source reader) as the registry
// says.
func (t *Task) build(bc *buildContext, l *link) (err error) {
	op := l.op
	// A constructor that panics fails the job being built, never the
	// process that builds it (a server's Execute call, a job's restart).
	defer func() {
		if r := recover(); r != nil {
			err = subtaskError(l.id, PanicError(r))
		}
	}()
	kind, err := bc.Registry.Lookup(op.Kind)
	if err != nil {
		return err
	}
	var in []*arrow.Schema
	for _, e := range bc.Graph.Inputs(op.ID) {
		in = append(in, bc.Graph.EdgeSchema(e, bc.schemas))
	}
	c := &operator.Context{
		Op: op, Subtask: t.subtask, Parallelism: op.Parallelism, MaxParallelism: bc.Graph.MaxParallelism,
		In: in, Out: bc.schemas[op.ID], Allocator: bc.Allocator, Counters: l.count,
		Logger:    bc.Logger.With(ident.Attr(l.id)),
		AttemptID: bc.AttemptID, Watermarks: linkOutput{l}, UDFs: bc.UDFMetrics,
		Workers: bc.WorkerPools,
	}
	if st := bc.From.Operator(op.UID); st != nil {
		c.Restored, c.RestoreBase = st, bc.From.Base
	}
	if kind.State.Keyed {
		c.Keyed = &operator.KeyedContext{
			KeyGroups: state.SubtaskKeyGroups(bc.Graph.MaxParallelism, op.Parallelism, t.subtask),
			StateDir:  bc.StateDir,
		}
	}
	if r, ok := t.reader.(connector.SplitReporter); ok && readsSourceBatches(bc.Graph, op.ID) {
		c.SourceSplits = r
	}
	for _, e := range bc.Graph.Outputs(op.ID) {
		if i := plan.LateRowsInput(e.FromOutput); i >= 0 {
			for len(c.LateRows) <= i {
				c.LateRows = append(c.LateRows, nil)
			}
			from := e.FromOutput
			c.LateRows[i] = func(ctx context.Context, b arrow.RecordBatch) error { return l.emitOn(ctx, from, b) }
		}
	}
	if len(op.Ends) > 0 {
		c.EndInput = sync.OnceFunc(func() { bc.endInput(op) })
	}
	if bc.PublishAtEnd != nil {
		c.PublishAtEnd = func(state []byte) { bc.PublishAtEnd(op, state) }
	}
	if kind.OpenSource != nil {
		t.reader, err = kind.OpenSource(c)
		return err
	}
	l.proc, err = kind.New(c)
	return err
}

// Release frees what the task holds: its source reader and every
// operator. After Run has returned, or for a task that never ran.
func (t *Task) Release() { _ = t.release() }

// release is Release, with the first panic of an operator's Release (or
// the reader's Close) as an error naming it: the other operators are
// still released.
func (t *Task) release() (err error) {
	t.persisting.Wait() // before the state backends close
	guard := func(l *link, free func()) {
		defer func() {
			if r := recover(); r != nil && err == nil {
				err = subtaskError(l.id, PanicError(r))
			}
		}()
		free()
	}
	if t.reader != nil {
		guard(t.links[0], func() { _ = t.reader.Close() })
	}
	for _, l := range t.links {
		if l.proc != nil {
			guard(l, l.proc.Release)
		}
	}
	return err
}

// cancel takes every chained processor's cancel path.
func (t *Task) cancel(cause error) {
	for _, l := range t.links {
		if l.proc != nil {
			l.proc.Cancel(cause)
		}
	}
}

// emit hands b, which l produced on its main output, to the operators
// chained to l (by function call; they do not take b) and to the edges
// leaving the chain (which do). It takes ownership of b.
func (l *link) emit(ctx context.Context, b arrow.RecordBatch) error {
	l.count.Out.Add(b.NumRows())
	return l.emitOn(ctx, plan.MainOutput, b)
}

// emitOn is emit on l's output `from` (a window's late rows are another
// one), without counting the rows out.
func (l *link) emitOn(ctx context.Context, from int, b arrow.RecordBatch) error {
	for _, c := range l.children {
		if c.fromOutput != from {
			continue
		}
		if err := c.process(ctx, 0, b); err != nil {
			b.Release()
			return err
		}
	}
	if len(l.outs) == 0 {
		b.Release()
		return nil
	}
	return l.outs.emit(ctx, from, b, l.task)
}

// process runs l's processor on b, of its input `input`; the caller keeps b.
func (l *link) process(ctx context.Context, input int, b arrow.RecordBatch) error {
	l.count.In.Add(b.NumRows())
	return l.call(func() error { return l.proc.Process(ctx, input, b, l.emit) })
}

// call runs one step of l's operator and names l in its error. A panic is
// recovered here, not only in Run, to name the operator that panicked
// rather than its chain's head.
func (l *link) call(step func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = l.named(PanicError(r))
		}
	}()
	return l.named(step())
}

// named makes err name l's operator unless an operator further down the
// chain is named in it already, or it names its own origin (a Python
// worker's error, as Config.ErrorNamesOrigin says).
func (l *link) named(err error) error {
	var taskErr *TaskError
	if err == nil || errors.As(err, &taskErr) || (l.namesOrigin != nil && l.namesOrigin(err)) {
		return err
	}
	return subtaskError(l.id, err)
}

// logger is the task's logger; a task built by hand (tests) has none.
func (t *Task) logger() *slog.Logger {
	if t.log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return t.log
}

// logEnd logs how the task ended: finished at debug, canceled (its job's
// cancel, or another task's failure) at debug, failed at info (the job
// logs the failure it restarts after or ends with at warn).
func (t *Task) logEnd(ctx context.Context, err error) {
	switch {
	case err == nil:
		t.logger().Debug("task finished")
	case ctx.Err() != nil:
		t.logger().Debug("task canceled", "cause", err)
	default:
		t.logger().Info("task failed", "error", err)
	}
}

// Run is the task goroutine. On failure or cancel it takes every
// processor's cancel path, frees what it holds and drains its inbox so no
// producer stays blocked.
func (t *Task) Run(ctx context.Context) (err error) {
	defer func() {
		// A bug in an operator fails its job, never the whole runtime
		// process (a server runs other jobs).
		if r := recover(); r != nil {
			err = t.head.named(PanicError(r))
		}
		if err != nil {
			// err may be the cause another task failed with (a canceled
			// task returns it): it is shared, never changed here.
			t.cancel(err)
		}
		t.align.release() // the channel state of an unfinished checkpoint
		if rerr := t.release(); err == nil {
			err = rerr
		}
		t.logEnd(ctx, err)
	}()
	// Cancel comes from outside the task goroutine, which may be blocked
	// inside a processor (a send to a hung worker): as Flink's task
	// canceler, it takes the processors' cancel path at once.
	stop := context.AfterFunc(ctx, func() { t.cancel(context.Cause(ctx)) })
	defer stop()
	if t.metrics == nil { // a task built by hand (tests)
		t.metrics = metrics.NewTask()
		for _, l := range t.links {
			l.task = t.metrics
		}
	}
	for _, l := range t.links {
		if l.proc != nil {
			if err := l.call(func() error { return l.proc.Open(ctx) }); err != nil {
				return err
			}
		}
	}
	t.logger().Debug("task running")
	if t.reader != nil {
		return t.runSource(ctx)
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for t.endedCount < t.in.producers {
		// During an aligned checkpoint's alignment the producers that
		// delivered the barrier are not read: their queues fill and they
		// wait (barrier.go).
		if m, ok := t.in.take(t.blocked()); ok {
			if err := t.busy(func() error { return t.handle(ctx, m) }); err != nil {
				return err
			}
			continue
		}
		var deadline <-chan time.Time
		if at, ok := t.deadline(); ok {
			timer.Reset(time.Until(at))
			deadline = timer.C
		}
		waiting := time.Now()
		select {
		case <-t.in.ready:
			metrics.Since(&t.metrics.Idle, waiting)
		case <-deadline:
			metrics.Since(&t.metrics.Idle, waiting)
			if err := t.busy(func() error { return t.onTimer(ctx) }); err != nil {
				return err
			}
		case <-t.signal:
			metrics.Since(&t.metrics.Idle, waiting)
			if err := t.busy(func() error { return t.onSignal(ctx) }); err != nil {
				return err
			}
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	return t.finish(ctx)
}

// finish ends the chain's operators upstream first, so that what one emits
// as it finishes reaches the next before that one finishes, then tells the
// consumers of every edge leaving the chain that this subtask is done.
// The end of input is the maximum watermark first (a task with producers
// has it from its valve already, every producer having sent it), as
// Flink's: every window fires and every timer runs.
func (t *Task) finish(ctx context.Context) error {
	t.finished.Store(true)
	if err := t.head.onWatermark(ctx, watermark.MaxWatermark); err != nil {
		return err
	}
	for _, l := range t.links {
		if l.proc != nil {
			if err := l.call(func() error { return l.proc.Finish(ctx, l.emit) }); err != nil {
				return err
			}
		}
	}
	for _, l := range t.links {
		if err := l.outs.end(ctx); err != nil {
			return err
		}
	}
	return nil
}

// deadline is the earliest time trigger of the chain's processors.
func (t *Task) deadline() (time.Time, bool) {
	var first time.Time
	found := false
	for _, l := range t.links {
		if l.proc == nil {
			continue
		}
		if at, ok := l.proc.Deadline(); ok && (!found || at.Before(first)) {
			first, found = at, true
		}
	}
	return first, found
}

// onTimer runs the time triggers that are due.
func (t *Task) onTimer(ctx context.Context) error {
	now := time.Now()
	for _, l := range t.links {
		if l.proc == nil {
			continue
		}
		if at, ok := l.proc.Deadline(); ok && !at.After(now) {
			if err := l.call(func() error { return l.proc.OnTimer(ctx, l.emit) }); err != nil {
				return err
			}
		}
	}
	return nil
}

// busy runs one step of the task and counts its time as busy, less the
// time it spent back-pressured (Flink counts the two apart).
func (t *Task) busy(step func() error) error {
	start, pressured := time.Now(), t.metrics.BackPressured.Load()
	err := step()
	t.metrics.Busy.Add(int64(time.Since(start)) - (t.metrics.BackPressured.Load() - pressured))
	return err
}

// readSource reads the next batch of the task's source. Reading counts as
// busy time, but for a rate-limited reader's waits for its rate: those are
// idle (a source that waits for its rate could read more), as Flink's
// rate-limited sources wait in their idle mailbox.
func (t *Task) readSource(ctx context.Context) (arrow.RecordBatch, error) {
	throttled, limited := t.reader.(connector.Throttled)
	var before time.Duration
	if limited {
		before = throttled.ThrottledTime()
	}
	start, pressured := time.Now(), t.metrics.BackPressured.Load()
	b, err := t.reader.Next(ctx)
	elapsed := time.Since(start)
	var waited time.Duration
	if limited {
		waited = min(elapsed, throttled.ThrottledTime()-before)
	}
	t.metrics.Idle.Add(int64(waited))
	t.metrics.Busy.Add(int64(elapsed-waited) - (t.metrics.BackPressured.Load() - pressured))
	return b, err
}

func (t *Task) runSource(ctx context.Context) error {
	for {
		// Barriers go between batches.
		if err := t.onSignal(ctx); err != nil {
			return err
		}
		if t.ending.Load() {
			return t.finish(ctx)
		}
		b, err := t.readSource(ctx)
		if errors.Is(err, io.EOF) {
			return t.finish(ctx)
		}
		if bl, ok := t.reader.(connector.Backlog); ok {
			// After every Next, data or none: an idle Kafka source that
			// skipped control records has moved on too.
			t.metrics.PendingRecords.Store(bl.PendingRecords())
		}
		if errors.Is(err, connector.ErrNoData) {
			// An idle unbounded source: barriers and timers go on meanwhile.
			if err := t.waitSource(ctx); err != nil {
				return err
			}
			if err := t.onTimer(ctx); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return t.head.named(err)
		}
		t.head.count.In.Add(b.NumRows())
		t.metrics.AddIn(b)
		if err := t.busy(func() error { return t.head.emit(ctx, b) }); err != nil {
			return err
		}
		// The chained operators' time triggers (a watermark assigner's
		// periodic emit, a UDF bundle's time) run between batches: a
		// reader blocks only for I/O and rate limiting.
		if _, ok := t.deadline(); ok {
			if err := t.busy(func() error { return t.onTimer(ctx) }); err != nil {
				return err
			}
		}
	}
}
