package exec

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"golang.org/x/sync/errgroup"

	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/runtime/sink"
)

// errStoppedWithSavepoint ends the tasks of a job stopped with a savepoint.
var errStoppedWithSavepoint = errors.New("exec: the job stopped with a savepoint")

// attempt is one run of every task of a job, from a fresh start or from a
// checkpoint, until all tasks end.
type attempt struct {
	job     *Job
	ctx     context.Context // canceled when the attempt must stop early
	cancel  context.CancelCauseFunc
	grp     *errgroup.Group
	gctx    context.Context
	inboxes [][]*inbox
	tasks   []*task
	coord   *coordinator
	// failed is taken by the attempt's first failure, which failure keeps
	// (written by a task or the coordinator, read after both ended).
	failed  sync.Once
	failure error
	// coordDone is closed when the coordinator's goroutine has returned.
	coordDone chan struct{}

	mu struct {
		sync.Mutex
		// finalParts: file sink subtasks' last parts, by operator.
		finalParts map[*plan.Operator][]sink.SinkState
	}
}

// keepFinalParts records the last parts of a file sink subtask that
// finished. Safe from any task goroutine.
func (a *attempt) keepFinalParts(op *plan.Operator, st sink.SinkState) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.mu.finalParts == nil {
		a.mu.finalParts = map[*plan.Operator][]sink.SinkState{}
	}
	a.mu.finalParts[op] = append(a.mu.finalParts[op], st)
}

// publishFinalParts publishes the parts the file sinks kept for the end,
// once every task has finished.
func (a *attempt) publishFinalParts() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	for op, states := range a.mu.finalParts {
		if err := sink.Recover(op.Node.GetSink().GetFile(), states); err != nil {
			return fmt.Errorf("exec: publishing the parts of the sink %q (uid %s): %w", op.Name, op.UID, err)
		}
	}
	return nil
}

// buildContext is what building an attempt's tasks needs.
type buildContext struct {
	g         *plan.Graph
	schemas   []*arrow.Schema
	inboxes   [][]*inbox
	outs      [][]outputs
	count     []counters
	opts      Options
	from      *restorePoint
	attemptID string // for sinks' part names; "" without checkpoints
	config    runtimeConfig
	// publishAtEnd receives a file sink subtask's last parts, when they
	// wait for the job's end (see sinkProc).
	publishAtEnd func(op *plan.Operator, st sink.SinkState)
}

// restorePoint is a completed snapshot to start from; base is the
// directory its relative paths resolve against.
type restorePoint struct {
	meta *Metadata
	base string
}

// operator returns the state of the operator with uid, or nil.
func (r *restorePoint) operator(uid string) *OperatorState {
	if r == nil {
		return nil
	}
	for i := range r.meta.Operators {
		if r.meta.Operators[i].UID == uid {
			return &r.meta.Operators[i]
		}
	}
	return nil
}

// checkRestore checks that a snapshot fits the job: same max parallelism,
// and every operator state claimed by an operator (unless
// IgnoreUnclaimedState).
func checkRestore(g *plan.Graph, m *Metadata, cfg RestoreConfig) error {
	if m.MaxParallelism != g.MaxParallelism {
		return fmt.Errorf("exec: the snapshot was taken with max parallelism %d (its number of key groups) and this job has %d: "+
			"plan the job with %s=%d, which cannot change once state has been saved", m.MaxParallelism, g.MaxParallelism,
			plan.ConfigMaxParallelism, m.MaxParallelism)
	}
	ops := operatorsByUID(g)
	for _, st := range m.Operators {
		if _, ok := ops[st.UID]; !ok && !cfg.IgnoreUnclaimedState {
			return fmt.Errorf("exec: the snapshot holds state of operator uid %q (%s %q), which this job does not have: "+
				"give the operator that owns it the same uid, or set %s=true to start without that state (Flink's allow-non-restored-state)",
				st.UID, st.Kind, st.Name, ConfigIgnoreUnclaimedState)
		}
	}
	return nil
}

// newAttempt builds every task of the job, restoring state from `from`
// when set. Nothing runs until start.
func (j *Job) newAttempt(ctx context.Context, from *restorePoint) (*attempt, error) {
	g, opts := j.g, j.opts
	sch, err := schemas(g)
	if err != nil {
		return nil, err
	}
	inboxes, outs, err := wire(g, sch, opts.ChannelCapacity, opts.Allocator)
	if err != nil {
		return nil, err
	}
	if err := recoverSinks(g, from, j.Attempts() > 0); err != nil {
		return nil, err
	}
	bc := &buildContext{g: g, schemas: sch, inboxes: inboxes, outs: outs, count: j.count, opts: opts, from: from, config: j.config}
	a := &attempt{job: j, inboxes: inboxes, coordDone: make(chan struct{})}
	if j.config.checkpoint.Interval > 0 || from != nil || j.config.restart.Strategy != "none" {
		// Attempts may follow: part files of different attempts never
		// share a name, and file sinks publish their last parts only when
		// the job ends.
		bc.attemptID = NewJobID()
		bc.publishAtEnd = a.keepFinalParts
	}
	a.ctx, a.cancel = context.WithCancelCause(ctx)
	a.grp, a.gctx = errgroup.WithContext(a.ctx)
	for _, head := range g.Operators {
		if isChained(g, head.ID) {
			continue // runs inside its chain head's task
		}
		for i := range head.Parallelism {
			t, err := buildTask(bc, head, i)
			if err != nil {
				a.release()
				return nil, err
			}
			a.tasks = append(a.tasks, t)
		}
	}
	a.coord = newCoordinator(j, a.tasks, a.fail, a.cancel)
	j.mu.Lock()
	j.mu.tasks = len(a.tasks)
	j.mu.attempts++
	j.mu.Unlock()
	return a, nil
}

// start runs every task and the checkpoint coordinator.
func (a *attempt) start() {
	for _, t := range a.tasks {
		a.grp.Go(func() error {
			err := t.run(a.gctx)
			if err != nil {
				a.fail(err)
			}
			return err
		})
	}
	go func() {
		defer close(a.coordDone)
		a.coord.run(a.gctx)
	}()
}

// fail stops the attempt for err unless it is stopping already; the first
// failure decides whether the job restarts (Job.onFailure).
func (a *attempt) fail(err error) {
	a.failed.Do(func() {
		if a.ctx.Err() != nil {
			return // canceled or stopped: not a failure
		}
		a.failure = err
		a.job.onFailure()
		a.cancel(err)
	})
}

// wait returns when every task of the attempt has ended, with the first
// failure, and frees what is still queued between tasks.
func (a *attempt) wait() error {
	err := a.grp.Wait()
	a.cancel(nil)
	<-a.coordDone
	if err == nil {
		// The coordinator may have failed the attempt as the last task
		// ended; a cancel that came then changes nothing.
		err = a.failure
	}
	for _, subtasks := range a.inboxes {
		for _, in := range subtasks {
			drain(in)
		}
	}
	return err
}

// release frees an attempt that never started.
func (a *attempt) release() {
	for _, t := range a.tasks {
		t.releaseAll()
	}
	a.cancel(nil)
}
