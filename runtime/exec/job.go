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
	for _, op := range g.Operators {
		for i := range op.Parallelism {
			t := &task{op: op, subtask: i, in: inboxes[op.ID][i], outs: outs[op.ID][i], count: &count[op.ID]}
			var in *arrow.Schema
			if edges := g.Inputs(op.ID); len(edges) > 0 {
				in = sch[edges[0].From]
			}
			if err := t.build(in, sch[op.ID], opts); err != nil {
				for _, t := range tasks {
					t.releaseAll()
				}
				life.move(Failed, Created)
				return nil, fmt.Errorf("exec: operator %q (uid %s, subtask %d): %w", op.Name, op.UID, i, err)
			}
			tasks = append(tasks, t)
		}
	}
	j := &Job{g: g, grp: grp, inboxes: inboxes, count: count, lifecycle: life,
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

// task is one operator subtask and its goroutine.
type task struct {
	op      *plan.Operator
	subtask int
	in      *inbox
	outs    outputs
	count   *counters
	reader  source.Reader // sources
	proc    processor     // everything else
	opener  interface{ open(context.Context) error }
}

func (t *task) build(in, out *arrow.Schema, opts Options) error {
	switch t.op.Kind {
	case plan.KindSource:
		r, err := source.Open(t.op.Node.GetSource(), source.Config{
			Schema: out, Subtask: t.subtask, Parallelism: t.op.Parallelism,
			BatchRows: opts.SourceBatchRows, Allocator: opts.Allocator,
		})
		t.reader = r
		return err
	case plan.KindSelect:
		exprs, _, err := compileSelect(t.op, in)
		if err != nil {
			return err
		}
		t.proc, err = newSelect(exprs, out)
		return err
	case plan.KindFilter:
		pred, err := expr.Compile(t.op.Node.GetFilter().GetPredicate(), in)
		if err != nil {
			return err
		}
		f, err := expr.NewFilter(pred)
		t.proc = &filterProc{f: f}
		return err
	case plan.KindUnion:
		t.proc = &unionProc{schema: out}
		return nil
	case plan.KindKeyedAggregate:
		p, err := newAggProc(t.op.Node, in, out, opts.Allocator)
		t.proc = p
		return err
	case plan.KindUDF, plan.KindMapBatches:
		p, err := newUDFProc(t.op, in, out, t.subtask, opts)
		if err != nil {
			return err
		}
		t.proc, t.opener = p, p
		return nil
	case plan.KindSink:
		var collect func(int, arrow.RecordBatch) error
		if opts.Collect != nil {
			op := t.op
			collect = func(subtask int, b arrow.RecordBatch) error { return opts.Collect(op, subtask, b) }
		}
		w, err := sink.Open(t.op.Node.GetSink(), sink.Config{
			Schema: out, Subtask: t.subtask, Parallelism: t.op.Parallelism,
			Stdout: opts.Stdout, Collect: collect,
		})
		if err != nil {
			return err
		}
		t.proc = &sinkProc{w: w}
		return nil
	}
	return fmt.Errorf("unknown operator kind %s", t.op.Kind)
}

func (t *task) releaseAll() {
	if t.reader != nil {
		_ = t.reader.Close()
	}
	if t.proc != nil {
		t.proc.release()
	}
}

// run is the task goroutine. On failure or cancel it takes the processor's
// cancel path, frees what it holds and drains its inbox so no producer
// stays blocked.
func (t *task) run(ctx context.Context) (err error) {
	defer func() {
		// A bug in an operator fails its job, never the whole runtime
		// process (a server runs other jobs).
		if r := recover(); r != nil {
			err = fmt.Errorf("internal error: %v\n%s", r, debug.Stack())
		}
		if err != nil {
			if t.proc != nil {
				t.proc.cancel(err)
			}
			err = t.wrap(err)
		}
		t.releaseAll()
	}()
	emit := func(ctx context.Context, b arrow.RecordBatch) error {
		t.count.out.Add(b.NumRows())
		return t.outs.emit(ctx, b)
	}
	if t.reader != nil {
		return t.runSource(ctx, emit)
	}
	// Cancel comes from outside the task goroutine, which may be blocked
	// inside the processor (a send to a hung worker): as Flink's task
	// canceler, it takes the processor's cancel path at once.
	stop := context.AfterFunc(ctx, func() { t.proc.cancel(context.Cause(ctx)) })
	defer stop()
	if t.opener != nil {
		if err := t.opener.open(ctx); err != nil {
			return err
		}
	}
	ended := 0
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for ended < t.in.producers {
		var deadline <-chan time.Time
		if at, ok := t.proc.deadline(); ok {
			timer.Reset(time.Until(at))
			deadline = timer.C
		}
		select {
		case m := <-t.in.ch:
			if m.batch == nil {
				ended++
				continue
			}
			t.count.in.Add(m.batch.NumRows())
			err := t.proc.process(ctx, m.input, m.batch, emit)
			m.batch.Release()
			if err != nil {
				return err
			}
		case <-deadline:
			if err := t.proc.onTimer(ctx, emit); err != nil {
				return err
			}
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	if err := t.proc.finish(ctx, emit); err != nil {
		return err
	}
	return t.outs.end(ctx)
}

func (t *task) runSource(ctx context.Context, emit emitFunc) error {
	for {
		b, err := t.reader.Next(ctx)
		if errors.Is(err, io.EOF) {
			return t.outs.end(ctx)
		}
		if err != nil {
			return err
		}
		t.count.in.Add(b.NumRows())
		if err := emit(ctx, b); err != nil {
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

// wrap names the operator, except on errors of a Python worker, which name
// their UDF, operator and subtask already, and on the job's cancel cause.
func (t *task) wrap(err error) error {
	var udfErr *bridge.UDFError
	if errors.As(err, &udfErr) || errors.Is(err, bridge.ErrWorkerLost) || errors.Is(err, bridge.ErrWorkerStart) {
		return err
	}
	return &TaskError{Operator: t.op.Name, UID: t.op.UID, Subtask: t.subtask, Err: err}
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
