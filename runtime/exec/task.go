package exec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flinkgo/flinkgo/runtime/expr"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/runtime/sink"
	"github.com/flinkgo/flinkgo/runtime/source"
	"github.com/flinkgo/flinkgo/udf/bridge"
)

// task is one subtask of a chain of operators and its goroutine: the
// chain's head reads its inbox (or its source) and hands its batches to the
// operators chained to it by function call.
type task struct {
	subtask int
	head    *link
	links   []*link // the chain, head first, in topological order
	in      *inbox
	reader  source.Reader // a source head's
	coord   *coordinator

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
	// persisting counts the goroutines writing snapshots out (barrier.go).
	persisting sync.WaitGroup

	// Task goroutine only.
	lastBarrier int64 // the latest checkpoint this task snapshotted or gave up
	committed   int64 // the latest completion acted on
	align       alignment
	ended       []bool // producers whose stream ended
	endedCount  int
	replay      []message // held back during an alignment, to handle next
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
func buildTask(bc *buildContext, head *plan.Operator, i int) (*task, error) {
	g, sch := bc.g, bc.schemas
	in := bc.inboxes[head.ID][i]
	t := &task{subtask: i, in: in, signal: make(chan struct{}, 1), ended: make([]bool, in.producers)}
	var add func(op *plan.Operator) (*link, error)
	add = func(op *plan.Operator) (*link, error) {
		l := &link{op: op, count: &bc.count[op.ID], outs: bc.outs[op.ID][i]}
		t.links = append(t.links, l)
		var in *arrow.Schema
		if edges := g.Inputs(op.ID); len(edges) > 0 {
			in = sch[edges[0].From]
		}
		if err := t.build(bc, l, in, sch[op.ID]); err != nil {
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

func (t *task) build(bc *buildContext, l *link, in, out *arrow.Schema) error {
	opts := bc.opts
	switch l.op.Kind {
	case plan.KindSource:
		restore, err := restoredSplits(bc.from.operator(l.op.UID))
		if err != nil {
			return err
		}
		r, err := source.Open(l.op.Node.GetSource(), source.Config{
			Schema: out, Subtask: t.subtask, Parallelism: l.op.Parallelism,
			BatchRows: opts.SourceBatchRows, Allocator: opts.Allocator, Restore: restore,
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
		p, err := newAggProc(l.op.Node, in, out, opts.Allocator, bc.g.MaxParallelism,
			emitsUpdates(bc.g, l.op), bc.config.updateInterval)
		if err != nil {
			return err
		}
		l.proc = p
		return p.setupState(context.Background(), bc, l.op, t.subtask)
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
		restore, err := restoredSink(bc.from.operator(l.op.UID), t.subtask)
		if err != nil {
			return err
		}
		w, err := sink.Open(l.op.Node.GetSink(), sink.Config{
			Schema: out, Subtask: t.subtask, Parallelism: l.op.Parallelism,
			Stdout: opts.Stdout, Collect: collect, Restore: restore, AttemptID: bc.attemptID,
		})
		if err != nil {
			return err
		}
		p := &sinkProc{w: w, file: l.op.Node.GetSink().GetFile() != nil}
		if p.file && bc.publishAtEnd != nil {
			op := l.op
			p.publishAtEnd = func(st sink.SinkState) { bc.publishAtEnd(op, st) }
		}
		l.proc = p
		return nil
	}
	return fmt.Errorf("unknown operator kind %s", l.op.Kind)
}

func (t *task) releaseAll() {
	t.persisting.Wait() // before the state backends close
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
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for t.endedCount < t.in.producers || len(t.replay) > 0 {
		if len(t.replay) > 0 {
			m := t.replay[0]
			t.replay = t.replay[1:]
			if err := t.handle(ctx, m); err != nil {
				return err
			}
			continue
		}
		var deadline <-chan time.Time
		if at, ok := t.deadline(); ok {
			timer.Reset(time.Until(at))
			deadline = timer.C
		}
		select {
		case m := <-t.in.ch:
			if err := t.handle(ctx, m); err != nil {
				return err
			}
		case <-deadline:
			if err := t.onTimer(ctx); err != nil {
				return err
			}
		case <-t.signal:
			if err := t.onSignal(ctx); err != nil {
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
	t.finished.Store(true)
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
		// Barriers go between batches.
		if err := t.onSignal(ctx); err != nil {
			return err
		}
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
