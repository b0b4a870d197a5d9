package exec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"golang.org/x/sync/errgroup"

	"github.com/flinkgo/flinkgo/runtime/expr"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/runtime/sink"
	"github.com/flinkgo/flinkgo/runtime/source"
	"github.com/flinkgo/flinkgo/udf/bridge"
	"github.com/flinkgo/flinkgo/udf/bridge/pluginrunner"
)

// Options tune a run. Zero fields take defaults.
type Options struct {
	// Runner is the template of every Python worker's options (interpreter,
	// logger, timeouts).
	Runner pluginrunner.Options
	// BundleSize and BundleTime: see package bundle.
	BundleSize int
	BundleTime time.Duration
	// ChannelCapacity is how many batches an inbox holds before producers
	// block. Default 4.
	ChannelCapacity int
	// SourceBatchRows is the largest batch a source reads. Default 10000.
	SourceBatchRows int
	// Allocator holds every batch. Default memory.DefaultAllocator.
	Allocator memory.Allocator
	// Stdout receives print sinks' rows. Default os.Stdout.
	Stdout io.Writer
	// Collect receives collect sinks' batches (retained: it releases them).
	Collect func(op *plan.Operator, subtask int, b arrow.RecordBatch) error
	// OnStateChange, when set, is called on every change of the job's
	// state (see JobState), in order, from the goroutine that made it. It
	// must not block.
	OnStateChange func(StateChange)
}

func (o Options) withDefaults() Options {
	if o.ChannelCapacity == 0 {
		o.ChannelCapacity = 4
	}
	if o.SourceBatchRows == 0 {
		o.SourceBatchRows = 10000
	}
	if o.Allocator == nil {
		o.Allocator = memory.DefaultAllocator
	}
	return o
}

// Metrics counts the rows each operator took in and gave out.
type Metrics struct {
	Operators []OperatorMetrics
}

// OperatorMetrics are one operator's totals over its subtasks.
type OperatorMetrics struct {
	Name, UID   string
	Kind        string
	Parallelism int
	RowsIn      int64
	RowsOut     int64
}

type counters struct{ in, out atomic.Int64 }

// Run executes g until every source is exhausted and every operator has
// finished, or until ctx ends or a task fails; it returns when every task
// and worker is gone. The error of a failed run is the first failure (it
// names the operator, and for a UDF the Python traceback); of a canceled
// run, ctx's cause.
func Run(ctx context.Context, g *plan.Graph, opts Options) (*Metrics, error) {
	j, err := Start(ctx, g, opts)
	if err != nil {
		return nil, err
	}
	return j.Wait()
}

// Job is a started run.
type Job struct {
	g         *plan.Graph
	grp       *errgroup.Group
	inboxes   [][]*inbox
	count     []counters
	lifecycle *lifecycle
	tasks     int // goroutines running operators: one per chain subtask
	// stopWatch stops the watch of the caller's ctx; watchDone is closed
	// when a watch that fired has moved the job to Canceling.
	stopWatch func() bool
	watchDone chan struct{}
	done      chan struct{}
	metrics   *Metrics
	err       error
}

// Start builds every task of g and starts them; see Run. Errors in
// building (an expression that does not compile, a worker that cannot be
// configured) are returned before anything runs.
func Start(ctx context.Context, g *plan.Graph, opts Options) (*Job, error) {
	opts = opts.withDefaults()
	sch, err := schemas(g)
	if err != nil {
		return nil, err
	}
	inboxes, outs, err := wire(g, sch, opts.ChannelCapacity, opts.Allocator)
	if err != nil {
		return nil, err
	}
	ctx = compute.WithAllocator(ctx, opts.Allocator)
	count := make([]counters, len(g.Operators))
	life := newLifecycle(opts.OnStateChange)
	grp, gctx := errgroup.WithContext(ctx)
	var tasks []*task
	for _, head := range g.Operators {
		if isChained(g, head.ID) {
			continue // runs inside its chain head's task
		}
		for i := range head.Parallelism {
			t, err := buildTask(g, head, i, sch, inboxes, outs, count, opts)
			if err != nil {
				for _, t := range tasks {
					t.releaseAll()
				}
				life.move(Failed, Created)
				return nil, err
			}
			tasks = append(tasks, t)
		}
	}
	j := &Job{g: g, grp: grp, inboxes: inboxes, count: count, lifecycle: life, tasks: len(tasks),
		watchDone: make(chan struct{}), done: make(chan struct{})}
	life.move(Running, Created)
	j.stopWatch = context.AfterFunc(ctx, func() {
		defer close(j.watchDone)
		life.move(Canceling, Running)
	})
	for _, t := range tasks {
		grp.Go(func() error {
			err := t.run(gctx)
			if err != nil && ctx.Err() == nil {
				// The first failure fails the job; the errgroup cancels
				// the other tasks with gctx.
				life.move(Failing, Running)
			}
			return err
		})
	}
	go j.wait()
	return j, nil
}

func (j *Job) wait() {
	err := j.grp.Wait()
	if !j.stopWatch() {
		<-j.watchDone // Canceling is reported before the end
	}
	// Every task has ended: free what is still queued between them.
	for _, subtasks := range j.inboxes {
		for _, in := range subtasks {
			drain(in)
		}
	}
	j.metrics, j.err = j.Snapshot(), err
	switch {
	case err == nil:
		// A cancel that came after every task had finished changes nothing.
		j.lifecycle.move(Finished, Running, Canceling)
	case j.lifecycle.state() == Canceling:
		j.lifecycle.move(Canceled, Canceling)
	default:
		j.lifecycle.move(Failed, Running, Failing)
	}
	close(j.done)
}

// State returns the job's current state. Safe at any time.
func (j *Job) State() JobState { return j.lifecycle.state() }

// History returns every state the job has been in, with when it entered
// it, starting with Created.
func (j *Job) History() []StateChange { return j.lifecycle.history() }

// Wait blocks until every task and worker is gone and returns the final
// metrics and the run's error. Safe to call from several goroutines.
func (j *Job) Wait() (*Metrics, error) {
	<-j.done
	return j.metrics, j.err
}

// Done is closed when the job has ended.
func (j *Job) Done() <-chan struct{} { return j.done }

// Snapshot returns the rows counted so far. Safe at any time.
func (j *Job) Snapshot() *Metrics {
	m := &Metrics{}
	for _, op := range j.g.Operators {
		m.Operators = append(m.Operators, OperatorMetrics{
			Name: op.Name, UID: op.UID, Parallelism: op.Parallelism, Kind: op.Kind.String(),
			RowsIn: j.count[op.ID].in.Load(), RowsOut: j.count[op.ID].out.Load(),
		})
	}
	return m
}

// task is one subtask of a chain of operators and its goroutine: the
// chain's head reads its inbox (or its source) and hands its batches to the
// operators chained to it by function call.
type task struct {
	subtask int
	head    *link
	links   []*link // the chain, head first, in topological order
	in      *inbox
	reader  source.Reader // a source head's
}

// link is one operator of a task's chain.
type link struct {
	op       *plan.Operator
	proc     processor // nil for a source
	opener   interface{ open(context.Context) error }
	count    *counters
	children []*link // operators chained to this one
	outs     outputs // edges leaving the chain
}

// isChained reports whether op runs in the task of an upstream operator.
func isChained(g *plan.Graph, op int) bool {
	in := g.Inputs(op)
	return len(in) == 1 && g.Operators[in[0].From].ChainID == g.Operators[op].ChainID
}

// buildTask builds subtask i of the chain that starts at head.
func buildTask(g *plan.Graph, head *plan.Operator, i int, sch []*arrow.Schema, inboxes [][]*inbox, outs [][]outputs, count []counters, opts Options) (*task, error) {
	t := &task{subtask: i, in: inboxes[head.ID][i]}
	var add func(op *plan.Operator) (*link, error)
	add = func(op *plan.Operator) (*link, error) {
		l := &link{op: op, count: &count[op.ID], outs: outs[op.ID][i]}
		t.links = append(t.links, l)
		var in *arrow.Schema
		if edges := g.Inputs(op.ID); len(edges) > 0 {
			in = sch[edges[0].From]
		}
		if err := t.build(l, in, sch[op.ID], opts); err != nil {
			return nil, fmt.Errorf("exec: operator %q (uid %s, subtask %d): %w", op.Name, op.UID, i, err)
		}
		for _, e := range g.Outputs(op.ID) {
			if isChained(g, e.To) {
				child, err := add(g.Operators[e.To])
				if err != nil {
					return nil, err
				}
				l.children = append(l.children, child)
			}
		}
		return l, nil
	}
	var err error
	t.head, err = add(head)
	if err != nil {
		t.releaseAll()
		return nil, err
	}
	return t, nil
}

func (t *task) build(l *link, in, out *arrow.Schema, opts Options) error {
	switch l.op.Kind {
	case plan.KindSource:
		r, err := source.Open(l.op.Node.GetSource(), source.Config{
			Schema: out, Subtask: t.subtask, Parallelism: l.op.Parallelism,
			BatchRows: opts.SourceBatchRows, Allocator: opts.Allocator,
		})
		t.reader = r
		return err
	case plan.KindSelect:
		exprs, _, err := compileSelect(l.op, in)
		if err != nil {
			return err
		}
		l.proc, err = newSelect(exprs, out)
		return err
	case plan.KindFilter:
		pred, err := expr.Compile(l.op.Node.GetFilter().GetPredicate(), in)
		if err != nil {
			return err
		}
		f, err := expr.NewFilter(pred)
		l.proc = &filterProc{f: f}
		return err
	case plan.KindUnion:
		l.proc = &unionProc{schema: out}
		return nil
	case plan.KindKeyedAggregate:
		p, err := newAggProc(l.op.Node, in, out, opts.Allocator)
		l.proc = p
		return err
	case plan.KindUDF, plan.KindMapBatches:
		p, err := newUDFProc(l.op, in, out, t.subtask, opts)
		if err != nil {
			return err
		}
		l.proc, l.opener = p, p
		return nil
	case plan.KindSink:
		var collect func(int, arrow.RecordBatch) error
		if opts.Collect != nil {
			op := l.op
			collect = func(subtask int, b arrow.RecordBatch) error { return opts.Collect(op, subtask, b) }
		}
		w, err := sink.Open(l.op.Node.GetSink(), sink.Config{
			Schema: out, Subtask: t.subtask, Parallelism: l.op.Parallelism,
			Stdout: opts.Stdout, Collect: collect,
		})
		if err != nil {
			return err
		}
		l.proc = &sinkProc{w: w}
		return nil
	}
	return fmt.Errorf("unknown operator kind %s", l.op.Kind)
}

func (t *task) releaseAll() {
	if t.reader != nil {
		_ = t.reader.Close()
	}
	for _, l := range t.links {
		if l.proc != nil {
			l.proc.release()
		}
	}
}

// cancel takes every chained processor's cancel path.
func (t *task) cancel(cause error) {
	for _, l := range t.links {
		if l.proc != nil {
			l.proc.cancel(cause)
		}
	}
}

// emit hands b, which l produced, to the operators chained to l (by
// function call; they do not take b) and to the edges leaving the chain
// (which do). It takes ownership of b.
func (l *link) emit(ctx context.Context, b arrow.RecordBatch) error {
	l.count.out.Add(b.NumRows())
	for _, c := range l.children {
		if err := c.process(ctx, 0, b); err != nil {
			b.Release()
			return err
		}
	}
	if len(l.outs) == 0 {
		b.Release()
		return nil
	}
	return l.outs.emit(ctx, b)
}

// process runs l's processor on b, of its input `input`; the caller keeps b.
func (l *link) process(ctx context.Context, input int, b arrow.RecordBatch) error {
	l.count.in.Add(b.NumRows())
	return l.named(l.proc.process(ctx, input, b, l.emit))
}

// named makes err name l's operator unless an operator further down the
// chain, or a Python worker, is named in it already.
func (l *link) named(err error) error {
	var taskErr *TaskError
	var udfErr *bridge.UDFError
	if err == nil || errors.As(err, &taskErr) || errors.As(err, &udfErr) ||
		errors.Is(err, bridge.ErrWorkerLost) || errors.Is(err, bridge.ErrWorkerStart) {
		return err
	}
	return &TaskError{Operator: l.op.Name, UID: l.op.UID, Err: err}
}

// run is the task goroutine. On failure or cancel it takes every
// processor's cancel path, frees what it holds and drains its inbox so no
// producer stays blocked.
func (t *task) run(ctx context.Context) (err error) {
	defer func() {
		// A bug in an operator fails its job, never the whole runtime
		// process (a server runs other jobs).
		if r := recover(); r != nil {
			err = t.head.named(fmt.Errorf("internal error: %v\n%s", r, debug.Stack()))
		}
		if err != nil {
			t.cancel(err)
			var taskErr *TaskError
			if errors.As(err, &taskErr) {
				taskErr.Subtask = t.subtask
			}
		}
		t.releaseAll()
	}()
	// Cancel comes from outside the task goroutine, which may be blocked
	// inside a processor (a send to a hung worker): as Flink's task
	// canceler, it takes the processors' cancel path at once.
	stop := context.AfterFunc(ctx, func() { t.cancel(context.Cause(ctx)) })
	defer stop()
	for _, l := range t.links {
		if l.opener != nil {
			if err := l.opener.open(ctx); err != nil {
				return l.named(err)
			}
		}
	}
	if t.reader != nil {
		return t.runSource(ctx)
	}
	ended := 0
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for ended < t.in.producers {
		var deadline <-chan time.Time
		if at, ok := t.deadline(); ok {
			timer.Reset(time.Until(at))
			deadline = timer.C
		}
		select {
		case m := <-t.in.ch:
			if m.batch == nil {
				ended++
				continue
			}
			err := t.head.process(ctx, m.input, m.batch)
			m.batch.Release()
			if err != nil {
				return err
			}
		case <-deadline:
			if err := t.onTimer(ctx); err != nil {
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
func (t *task) finish(ctx context.Context) error {
	for _, l := range t.links {
		if l.proc != nil {
			if err := l.named(l.proc.finish(ctx, l.emit)); err != nil {
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
func (t *task) deadline() (time.Time, bool) {
	var first time.Time
	found := false
	for _, l := range t.links {
		if l.proc == nil {
			continue
		}
		if at, ok := l.proc.deadline(); ok && (!found || at.Before(first)) {
			first, found = at, true
		}
	}
	return first, found
}

// onTimer runs the time triggers that are due.
func (t *task) onTimer(ctx context.Context) error {
	now := time.Now()
	for _, l := range t.links {
		if l.proc == nil {
			continue
		}
		if at, ok := l.proc.deadline(); ok && !at.After(now) {
			if err := l.named(l.proc.onTimer(ctx, l.emit)); err != nil {
				return err
			}
		}
	}
	return nil
}

func (t *task) runSource(ctx context.Context) error {
	for {
		b, err := t.reader.Next(ctx)
		if errors.Is(err, io.EOF) {
			return t.finish(ctx)
		}
		if err != nil {
			return t.head.named(err)
		}
		t.head.count.in.Add(b.NumRows())
		if err := t.head.emit(ctx, b); err != nil {
			return err
		}
	}
}

// drain frees the batches left in an inbox once no task runs.
func drain(in *inbox) {
	for {
		select {
		case m := <-in.ch:
			if m.batch != nil {
				m.batch.Release()
			}
		default:
			return
		}
	}
}

// TaskError is the failure of one operator subtask.
type TaskError struct {
	Operator, UID string
	Subtask       int
	Err           error
}

func (e *TaskError) Error() string {
	return fmt.Sprintf("operator %q (uid %s, subtask %d): %v", e.Operator, e.UID, e.Subtask, e.Err)
}

func (e *TaskError) Unwrap() error { return e.Err }
