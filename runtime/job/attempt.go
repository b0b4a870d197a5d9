package job

import (
	"context"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/flinkgo/flinkgo/runtime/checkpoint"
	"github.com/flinkgo/flinkgo/runtime/config"
	"github.com/flinkgo/flinkgo/runtime/operators"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/runtime/task"
)

// attempt is one run of every task of a job, from a fresh start or from a
// checkpoint, until all tasks end.
type attempt struct {
	job    *Job
	ctx    context.Context // canceled when the attempt must stop early
	cancel context.CancelCauseFunc
	grp    *errgroup.Group
	gctx   context.Context
	tasks  *task.Set
	coord  *checkpoint.Coordinator
	// failed is taken by the attempt's first failure, which failure keeps
	// (written by a task or the coordinator, read after both ended).
	failed  sync.Once
	failure error
	// coordDone is closed when the coordinator's goroutine has returned.
	coordDone chan struct{}
	// rescale is set when the attempt stopped for a rescale (taking
	// failed, so no failure follows it).
	rescale *pendingRescale

	mu struct {
		sync.Mutex
		// finalParts: two-phase sink subtasks' last precommits, by
		// operator.
		finalParts map[*plan.Operator][][]byte
	}
}

// keepFinalParts records the last precommit of a two-phase sink subtask
// that finished. Safe from any task goroutine.
func (a *attempt) keepFinalParts(op *plan.Operator, st []byte) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.mu.finalParts == nil {
		a.mu.finalParts = map[*plan.Operator][][]byte{}
	}
	a.mu.finalParts[op] = append(a.mu.finalParts[op], st)
}

// publishFinalParts publishes the parts the file sinks kept for the end,
// once every task has finished.
func (a *attempt) publishFinalParts() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	for op, states := range a.mu.finalParts {
		if err := operators.PublishFinalParts(a.job.opts.Connectors, op, states, a.job.opts.Paths); err != nil {
			return fmt.Errorf("job: %w", err)
		}
	}
	return nil
}

// checkRestore checks that a snapshot fits the job: same max parallelism,
// and every operator state claimed by an operator (unless
// IgnoreUnclaimedState).
func checkRestore(g *plan.Graph, m *Metadata, cfg config.RestoreConfig) error {
	if m.MaxParallelism != g.MaxParallelism {
		return fmt.Errorf("job: the snapshot was taken with max parallelism %d (its number of key groups) and this job has %d: "+
			"plan the job with %s=%d, which cannot change once state has been saved", m.MaxParallelism, g.MaxParallelism,
			plan.ConfigMaxParallelism, m.MaxParallelism)
	}
	ops := operatorsByUID(g)
	if st, ok := m.ChannelStateOf(); ok {
		// The batches in flight belong to channels between subtasks:
		// another parallelism has other channels.
		// (A stateless operator's change shows as another number of
		// producers when the tasks are built: task.restoreChannels.)
		for _, prev := range m.Operators {
			if op, ok := ops[prev.UID]; ok && prev.Parallelism != op.Parallelism {
				return fmt.Errorf("job: checkpoint %d is unaligned and holds channel state (batches in flight, of operator %q among others), "+
					"so the job must restore at the parallelism it was taken with (operator %q had %d, now %d): "+
					"restore at that parallelism, take a savepoint (savepoints are always aligned) or stop with a savepoint, and rescale from that",
					m.CheckpointID, st.Name, op.Name, prev.Parallelism, op.Parallelism)
			}
		}
	}
	for _, st := range m.Operators {
		if _, ok := ops[st.UID]; !ok && !cfg.IgnoreUnclaimedState {
			return fmt.Errorf("job: the snapshot holds state of operator uid %q (%s %q), which this job does not have: "+
				"give the operator that owns it the same uid, or set %s=true to start without that state (Flink's allow-non-restored-state)",
				st.UID, st.Kind, st.Name, config.ConfigIgnoreUnclaimedState)
		}
	}
	return nil
}

// newAttempt builds every task of the job, restoring state from `from`
// when set. Nothing runs until start.
func (j *Job) newAttempt(ctx context.Context, from *checkpoint.RestorePoint) (*attempt, error) {
	j.mu.Lock()
	g, taskMetrics, udfMetrics, opts := j.mu.graph, j.mu.taskMetrics, j.mu.udfMetrics, j.opts
	j.mu.Unlock()
	if err := operators.RecoverSinks(j.opts.Connectors, g, from, j.Attempts() > 0, j.opts.Paths); err != nil {
		return nil, fmt.Errorf("job: %w", err)
	}
	if from != nil {
		j.opts.Logger.Info("restoring", "checkpoint", from.Meta.CheckpointID, "savepoint", from.Meta.Savepoint,
			"channel_state_bytes", from.Meta.ChannelStateBytes())
	}
	a := &attempt{job: j, coordDone: make(chan struct{})}
	cfg := task.Config{
		Graph: g, Registry: j.registry, Counters: j.count, TaskMetrics: taskMetrics, UDFMetrics: udfMetrics, ChannelCapacity: opts.ChannelCapacity,
		Allocator: opts.Allocator, StateDir: opts.StateDir, From: from, Logger: opts.Logger, WorkerPools: j.workers,
		ErrorNamesOrigin: operators.ErrorNamesOrigin,
		Attempt:          j.Attempts() + 1, // the logger names the job already
	}
	holds, err := operators.KeepsOutputUntilEnd(j.opts.Connectors, g)
	if err != nil {
		return nil, fmt.Errorf("job: %w", err)
	}
	if j.config.Checkpoint.Interval > 0 || from != nil || j.config.Restart.Strategy != "none" || holds {
		// Attempts may follow, or a sink writes beside older files: part
		// files of different attempts never share a name, and file sinks
		// publish their last parts only when the job ends.
		cfg.AttemptID = NewJobID()
		cfg.PublishAtEnd = a.keepFinalParts
	}
	tasks, err := task.Build(cfg)
	if err != nil {
		return nil, err
	}
	a.tasks = tasks
	a.ctx, a.cancel = context.WithCancelCause(ctx)
	a.grp, a.gctx = errgroup.WithContext(a.ctx)
	participants := make([]checkpoint.Participant, len(tasks.Tasks))
	for i, t := range tasks.Tasks {
		participants[i] = t
	}
	a.coord = checkpoint.NewCoordinator(checkpoint.CoordinatorConfig{
		Graph: g, JobID: j.id, Config: j.config.Checkpoint, Store: j.store, Requests: j.requests,
		Record: func(s checkpoint.Stats) { j.record(s); j.onCheckpointForRescale(a, s) }, Fail: a.fail, Stop: a.cancel,
		ForceAligned: j.rescalePending, Logger: opts.Logger,
	}, participants)
	for _, t := range tasks.Tasks {
		t.SetCoordinator(a.coord)
	}
	j.mu.Lock()
	j.mu.tasks = len(tasks.Tasks)
	j.mu.attempts++
	j.mu.Unlock()
	return a, nil
}

// start runs every task and the checkpoint coordinator.
func (a *attempt) start() {
	a.job.mu.Lock()
	a.job.mu.executingSince = time.Now()
	a.job.mu.attempt = a
	a.job.mu.Unlock()
	for _, t := range a.tasks.Tasks {
		a.grp.Go(func() error {
			err := t.Run(a.gctx)
			if err != nil {
				a.fail(err)
			}
			return err
		})
	}
	go func() {
		defer close(a.coordDone)
		defer func() {
			if r := recover(); r != nil {
				a.fail(fmt.Errorf("checkpoint coordinator: %w", task.PanicError(r)))
			}
		}()
		a.coord.Run(a.gctx)
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
		a.job.onFailure(err)
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
	a.tasks.Drain()
	return err
}

// release frees an attempt that never started.
func (a *attempt) release() {
	a.tasks.Release()
	a.cancel(nil)
}

// operatorsByUID indexes a graph's operators.
func operatorsByUID(g *plan.Graph) map[string]*plan.Operator {
	m := map[string]*plan.Operator{}
	for _, op := range g.Operators {
		m[op.UID] = op
	}
	return m
}
