package checkpoint

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/flinkgo/flinkgo/runtime/config"
	"github.com/flinkgo/flinkgo/runtime/plan"
)

// Stats describes one checkpoint or savepoint of a job.
type Stats struct {
	ID        int64
	Savepoint bool
	// Status is "completed", "failed" or "aborted" (a task finished before
	// it could take part, or the job stopped).
	Status string
	Path   string // the directory holding its _metadata, when completed
	// Size is the bytes under Path when it completed (read then: retention
	// may delete it later); -1 when they could not be read.
	Size int64
	// PersistedData is the bytes of channel state (an unaligned
	// checkpoint's batches in flight, Flink's persisted_data).
	PersistedData int64
	Unaligned     bool
	Err           error // why it failed
	Started       time.Time
	Duration      time.Duration
}

// ErrDeclined wraps the reason a checkpoint could not complete.
var ErrDeclined = errors.New("checkpoint failed")

// ErrStoppedWithSavepoint ends the tasks of a job stopped with a savepoint.
var ErrStoppedWithSavepoint = errors.New("the job stopped with a savepoint")

// Target tells a task what the checkpoint it snapshots is for.
type Target struct {
	ID        int64
	Savepoint bool
	// Dir is where keyed state goes: the storage root for a checkpoint,
	// the savepoint's directory for a savepoint.
	Dir string
	// Unaligned: barriers overtake the batches queued ahead of them, which
	// the tasks store as channel state (FLIP-76). Never for a savepoint.
	Unaligned bool
}

// Ack is a task's answer to a checkpoint: its operators' states, or why it
// could not take them.
type Ack struct {
	ID     int64
	Task   Participant
	States map[string]SubtaskState // by operator uid
	Err    error
}

// Participant is a task as the coordinator sees it. Every method is safe
// from any goroutine and never blocks.
type Participant interface {
	// IsSource reports whether the task reads a source (barriers start
	// there).
	IsSource() bool
	// RequestBarrier asks a source task to send checkpoint id's barrier.
	RequestBarrier(id int64)
	// NotifyComplete tells the task checkpoint id completed.
	NotifyComplete(id int64)
	// StopSource makes a source task read nothing more (stop with
	// savepoint).
	StopSource()
	// Finished reports whether the task has finished its input.
	Finished() bool
	// CommittedUpTo is the latest completion the task has acted on.
	CommittedUpTo() int64
}

// Request asks the coordinator for a savepoint into dir ("" for
// the configured savepoint directory), or with checkpoint for a checkpoint
// now; the answer is its path.
type Request struct {
	Dir        string
	Checkpoint bool
	// Stop: stop the job once the savepoint completed and every task
	// acted on its completion (sinks committed), as Flink's stop with
	// savepoint.
	Stop   bool
	Answer chan Answer
}

// Answer is a Request's outcome: the snapshot's path, or why there is
// none.
type Answer struct {
	Path string
	Err  error
}

// pendingCheckpoint is the checkpoint being taken (at most one at a time,
// as Flink's default max-concurrent-checkpoints 1).
type pendingCheckpoint struct {
	target   Target
	started  time.Time
	deadline time.Time
	states   map[string][]SubtaskState // by operator uid
	acked    map[Participant]bool
	request  *Request
}

// Coordinator triggers the checkpoints of one attempt of a job, collects
// the tasks' acknowledgements, writes _metadata when every task answered,
// tells the tasks (sinks commit), and drops checkpoints beyond the
// retained number. One goroutine per attempt (Run); the completed
// checkpoints (Store) outlive attempts.
type Coordinator struct {
	cfg     CoordinatorConfig
	tasks   []Participant
	sources []Participant
	acks    chan Ack

	mu struct {
		sync.Mutex
		targets map[int64]Target
	}
	pending  *pendingCheckpoint
	failures int // checkpoint failures in a row
	queued   []*Request
	stopped  bool // a stop-with-savepoint savepoint completed
	// lastCompleted is the id of the latest completed checkpoint or
	// savepoint of this attempt.
	lastCompleted int64
}

// stopGrace is how long a stop with savepoint waits for every task to act
// on the savepoint's completion before it ends the attempt anyway (what a
// sink did not commit stays pending, and a restore from the savepoint
// commits it).
const stopGrace = 30 * time.Second

// waitAndStop ends the attempt once every task acted on the completion of
// the last savepoint, or after stopGrace.
func (c *Coordinator) waitAndStop(ctx context.Context) {
	deadline := time.After(stopGrace)
	poll := time.NewTicker(10 * time.Millisecond)
	defer poll.Stop()
	for !c.everyTaskCommitted(c.lastCompleted) {
		select {
		case <-poll.C:
		case <-deadline:
			c.cfg.Stop(ErrStoppedWithSavepoint)
			return
		case <-ctx.Done():
			c.cfg.Stop(ErrStoppedWithSavepoint)
			return
		}
	}
	c.cfg.Stop(ErrStoppedWithSavepoint)
}

// everyTaskCommitted reports whether every task acted on the completion of
// checkpoint id, or has finished.
func (c *Coordinator) everyTaskCommitted(id int64) bool {
	for _, t := range c.tasks {
		if t.CommittedUpTo() < id && !t.Finished() {
			return false
		}
	}
	return true
}

// someTaskFinished reports whether a task that has not acknowledged p has
// finished (p can never complete).
func (c *Coordinator) someTaskFinished(p *pendingCheckpoint) bool {
	for _, t := range c.tasks {
		if !p.acked[t] && t.Finished() {
			return true
		}
	}
	return false
}

// CoordinatorConfig is what a Coordinator works with: the job's, and the
// attempt's.
type CoordinatorConfig struct {
	Graph  *plan.Graph
	JobID  string
	Config config.CheckpointConfig
	Store  *Store
	// Requests carries savepoint and checkpoint requests (Job.request).
	Requests <-chan *Request
	// Record keeps the stats of a checkpoint that ended.
	Record func(Stats)
	// Fail fails the attempt (too many checkpoint failures in a row).
	Fail func(error)
	// Stop ends the attempt (stop with savepoint).
	Stop context.CancelCauseFunc
	// ForceAligned, when set and true, makes the next checkpoint aligned
	// even when Config.Unaligned is set: a rescale restarts from it, and
	// channel state cannot be rescaled.
	ForceAligned func() bool
	// Logger gets each trigger (debug); how a checkpoint ended is logged
	// by Record's owner (the job), with its stats. Nil: discarded.
	Logger *slog.Logger
}

// NewCoordinator returns the coordinator of an attempt of these tasks.
func NewCoordinator(cfg CoordinatorConfig, tasks []Participant) *Coordinator {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	c := &Coordinator{cfg: cfg, tasks: tasks, acks: make(chan Ack, len(tasks))}
	for _, t := range tasks {
		if t.IsSource() {
			c.sources = append(c.sources, t)
		}
	}
	c.mu.targets = map[int64]Target{}
	return c
}

// Acknowledge hands a task's answer to the coordinator; it blocks until
// the coordinator takes it or ctx ends.
func (c *Coordinator) Acknowledge(ctx context.Context, a Ack) error {
	select {
	case c.acks <- a:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// Target returns what checkpoint id is for. Safe from any goroutine.
func (c *Coordinator) Target(id int64) (Target, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.mu.targets[id]
	return t, ok
}

// Run is the coordinator's goroutine; it returns when ctx ends.
func (c *Coordinator) Run(ctx context.Context) {
	cfg := c.cfg.Config
	var tick <-chan time.Time
	if cfg.Interval > 0 {
		t := time.NewTicker(cfg.Interval)
		defer t.Stop()
		tick = t.C
	}
	timeout := time.NewTimer(time.Hour)
	defer timeout.Stop()
	defer c.abortPending(errors.New("the job stopped"))
	for {
		var expired <-chan time.Time
		if c.pending != nil {
			timeout.Reset(time.Until(c.pending.deadline))
			expired = timeout.C
		}
		select {
		case <-ctx.Done():
			for _, r := range c.queued {
				r.Answer <- Answer{Err: fmt.Errorf("no savepoint: the job stopped: %w", context.Cause(ctx))}
			}
			return
		case <-tick:
			switch {
			case c.pending == nil:
				c.trigger(nil)
			case c.someTaskFinished(c.pending):
				c.abortPending(errors.New("a task finished before it took part"))
			}
		case r := <-c.cfg.Requests:
			if c.pending == nil {
				c.trigger(r)
			} else {
				c.queued = append(c.queued, r)
			}
		case a := <-c.acks:
			c.acknowledge(a)
		case <-expired:
			c.failPending(fmt.Errorf("%w: checkpoint %d expired after %s before every task acknowledged it (raise %s)",
				ErrDeclined, c.pending.target.ID, cfg.Timeout, config.ConfigCheckpointTimeout))
		}
		if c.stopped {
			c.waitAndStop(ctx)
			return
		}
		if c.pending == nil && len(c.queued) > 0 {
			r := c.queued[0]
			c.queued = c.queued[1:]
			c.trigger(r)
		}
	}
}

// trigger starts a checkpoint, or a savepoint for r, by asking every
// source task to send its barrier.
func (c *Coordinator) trigger(r *Request) {
	for _, t := range c.tasks {
		if t.Finished() {
			// Some tasks have finished: they cannot take part, and the
			// end of the input commits what remains.
			if r != nil {
				r.Answer <- Answer{Err: errors.New("no snapshot: some tasks have already finished")}
			}
			return
		}
	}
	s := c.cfg.Store
	id := s.NextID()
	cfg := c.cfg.Config
	target := Target{ID: id}
	if cfg.Unaligned && (c.cfg.ForceAligned == nil || !c.cfg.ForceAligned()) {
		target.Unaligned = true
	}
	if r != nil && !r.Checkpoint {
		dir := r.Dir
		if dir == "" {
			dir = cfg.SavepointDir
		}
		if dir == "" {
			r.Answer <- Answer{Err: fmt.Errorf("no savepoint directory: give one, or set %s", config.ConfigSavepointDir)}
			return
		}
		// Savepoints are always aligned, as Flink's.
		target.Savepoint, target.Dir, target.Unaligned = true, NewSavepointDir(dir, c.cfg.JobID), false
	} else if err := s.EnsureStorage(); err != nil {
		if r != nil {
			r.Answer <- Answer{Err: err}
		}
		c.recordFailure(Stats{ID: id, Status: "failed", Err: err, Started: time.Now()})
		return
	} else {
		target.Dir = s.WorkRoot() // once EnsureStorage pinned it
	}
	now := time.Now()
	c.pending = &pendingCheckpoint{
		target: target, started: now, deadline: now.Add(cfg.Timeout),
		states: map[string][]SubtaskState{}, acked: map[Participant]bool{}, request: r,
	}
	c.mu.Lock()
	c.mu.targets[id] = target
	c.mu.Unlock()
	c.cfg.Logger.Debug("checkpoint triggered", "checkpoint", id, "savepoint", target.Savepoint, "unaligned", target.Unaligned)
	for _, t := range c.sources {
		t.RequestBarrier(id)
	}
}

// acknowledge records a task's answer and completes the checkpoint when
// every task has answered.
func (c *Coordinator) acknowledge(a Ack) {
	p := c.pending
	if p == nil || a.ID != p.target.ID {
		return // an aborted checkpoint's late answer
	}
	if a.Err != nil {
		c.failPending(fmt.Errorf("%w: checkpoint %d: %w", ErrDeclined, a.ID, a.Err))
		return
	}
	p.acked[a.Task] = true
	for uid, st := range a.States {
		p.states[uid] = append(p.states[uid], st)
	}
	if len(p.acked) < len(c.tasks) {
		return
	}
	if err := c.complete(p); err != nil {
		c.failPending(fmt.Errorf("%w: checkpoint %d: %w", ErrDeclined, p.target.ID, err))
	}
}

// complete writes the _metadata of p, makes it the latest checkpoint, and
// tells every task.
func (c *Coordinator) complete(p *pendingCheckpoint) error {
	g := c.cfg.Graph
	m := &Metadata{
		Version: MetadataVersion, JobID: c.cfg.JobID, JobName: g.Name, CheckpointID: p.target.ID,
		Savepoint: p.target.Savepoint, Timestamp: p.started, MaxParallelism: g.MaxParallelism,
	}
	for _, op := range g.Operators {
		subtasks := p.states[op.UID]
		if len(subtasks) == 0 {
			continue // stateless
		}
		slices.SortFunc(subtasks, func(a, b SubtaskState) int { return cmp.Compare(a.Subtask, b.Subtask) })
		m.Operators = append(m.Operators, OperatorState{
			UID: op.UID, Name: op.Name, Kind: op.Kind.String(), Parallelism: op.Parallelism, Subtasks: subtasks,
		})
	}
	dir := p.target.Dir
	if !p.target.Savepoint {
		dir = c.cfg.Store.CheckpointDir(p.target.ID)
	}
	if err := WriteMetadata(dir, m); err != nil {
		return err
	}
	c.pending = nil
	c.failures = 0
	c.forget(p.target.ID)
	shown := dir
	if !p.target.Savepoint {
		shown = c.cfg.Store.Shown(dir)
	}
	stats := Stats{ID: p.target.ID, Savepoint: p.target.Savepoint, Status: "completed", Path: shown,
		Started: p.started, Duration: time.Since(p.started), Size: -1, Unaligned: p.target.Unaligned,
		PersistedData: m.ChannelStateBytes()}
	if n, err := dirSize(dir); err == nil {
		stats.Size = n
	}
	if !p.target.Savepoint {
		if err := c.cfg.Store.Add(m, dir); err != nil {
			_ = removeFile(joinPath(dir, "_metadata"))
			return err
		}
	}
	c.cfg.Record(stats)
	c.lastCompleted = p.target.ID
	if p.request != nil && p.request.Stop {
		c.stopped = true
		for _, t := range c.sources {
			t.StopSource()
		}
	}
	for _, t := range c.tasks {
		t.NotifyComplete(p.target.ID)
	}
	if p.request != nil {
		p.request.Answer <- Answer{Path: shown}
	}
	return nil
}

// failPending aborts the pending checkpoint as failed; too many failures
// in a row fail the job.
func (c *Coordinator) failPending(err error) {
	err = c.cfg.Store.ShowNames(err)
	p := c.pending
	c.pending = nil
	c.discard(p)
	if p.request != nil {
		p.request.Answer <- Answer{Err: err}
		if p.target.Savepoint {
			c.cfg.Record(Stats{ID: p.target.ID, Savepoint: true, Status: "failed", Err: err, Started: p.started, Duration: time.Since(p.started)})
			return // a failed savepoint does not count against the job
		}
	}
	c.recordFailure(Stats{ID: p.target.ID, Status: "failed", Err: err, Started: p.started, Duration: time.Since(p.started)})
}

func (c *Coordinator) recordFailure(s Stats) {
	s.Err = c.cfg.Store.ShowNames(s.Err)
	c.cfg.Record(s)
	c.failures++
	if tolerable := c.cfg.Config.TolerableFailures; c.failures > tolerable {
		c.cfg.Fail(fmt.Errorf("%w (%d failures in a row, %s=%d)", s.Err, c.failures, config.ConfigTolerableFailures, tolerable))
	}
}

// abortPending drops the pending checkpoint without counting a failure.
func (c *Coordinator) abortPending(cause error) {
	p := c.pending
	if p == nil {
		return
	}
	c.pending = nil
	c.discard(p)
	err := fmt.Errorf("checkpoint %d aborted: %w", p.target.ID, cause)
	if p.request != nil {
		p.request.Answer <- Answer{Err: err}
	}
	c.cfg.Record(Stats{ID: p.target.ID, Savepoint: p.target.Savepoint, Status: "aborted", Err: err, Started: p.started, Duration: time.Since(p.started)})
}

// forget drops the target of a checkpoint that completed or was given up:
// tasks ask for it only until they acknowledge.
func (c *Coordinator) forget(id int64) {
	c.mu.Lock()
	delete(c.mu.targets, id)
	c.mu.Unlock()
}

// discard removes what a checkpoint that will not complete wrote of its
// own (its chk-<n> or savepoint directory; shared files are swept by the
// store).
func (c *Coordinator) discard(p *pendingCheckpoint) {
	c.forget(p.target.ID)
	if p.target.Savepoint {
		_ = removeAll(p.target.Dir)
	} else {
		_ = c.cfg.Store.RemoveCheckpoint(p.target.ID)
	}
}
