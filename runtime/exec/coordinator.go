package exec

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/state"
)

// CheckpointStats describes one checkpoint or savepoint of a job.
type CheckpointStats struct {
	ID        int64
	Savepoint bool
	// Status is "completed", "failed" or "aborted" (a task finished before
	// it could take part, or the job stopped).
	Status   string
	Path     string // the directory holding its _metadata, when completed
	Err      error  // why it failed
	Started  time.Time
	Duration time.Duration
}

// ErrCheckpointDeclined wraps the reason a checkpoint could not complete.
var ErrCheckpointDeclined = errors.New("exec: checkpoint failed")

// checkpointTarget tells a task what the checkpoint it snapshots is for.
type checkpointTarget struct {
	id        int64
	savepoint bool
	// dir is where keyed state goes: the storage root for a checkpoint,
	// the savepoint's directory for a savepoint.
	dir string
}

// ack is a task's answer to a checkpoint: its operators' states, or why it
// could not take them.
type ack struct {
	id     int64
	task   *task
	states map[string]SubtaskState // by operator uid
	err    error
}

// snapshotRequest asks the coordinator for a savepoint into dir ("" for
// the configured savepoint directory), or with checkpoint for a checkpoint
// now; the answer is its path.
type snapshotRequest struct {
	dir        string
	checkpoint bool
	// stop: stop the job once the savepoint completed and every task
	// acted on its completion (sinks committed), as Flink's stop with
	// savepoint.
	stop   bool
	answer chan snapshotAnswer
}

type snapshotAnswer struct {
	path string
	err  error
}

// pendingCheckpoint is the checkpoint being taken (at most one at a time,
// as Flink's default max-concurrent-checkpoints 1).
type pendingCheckpoint struct {
	target   checkpointTarget
	started  time.Time
	deadline time.Time
	states   map[string][]SubtaskState // by operator uid
	acked    map[*task]bool
	request  *snapshotRequest
}

// coordinator triggers the checkpoints of one attempt of a job, collects
// the tasks' acknowledgements, writes _metadata when every task answered,
// tells the tasks (sinks commit), and drops checkpoints beyond the
// retained number. One goroutine per attempt; the completed checkpoints
// (store) outlive attempts.
type coordinator struct {
	job     *Job
	tasks   []*task
	sources []*task
	acks    chan ack
	fail    func(error)             // fails the attempt (too many checkpoint failures)
	stop    context.CancelCauseFunc // ends the attempt (stop with savepoint)

	mu struct {
		sync.Mutex
		targets map[int64]checkpointTarget
	}
	pending  *pendingCheckpoint
	failures int // checkpoint failures in a row
	queued   []*snapshotRequest
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
func (c *coordinator) waitAndStop(ctx context.Context) {
	deadline := time.After(stopGrace)
	poll := time.NewTicker(10 * time.Millisecond)
	defer poll.Stop()
	for !c.everyTaskCommitted(c.lastCompleted) {
		select {
		case <-poll.C:
		case <-deadline:
			c.stop(errStoppedWithSavepoint)
			return
		case <-ctx.Done():
			c.stop(errStoppedWithSavepoint)
			return
		}
	}
	c.stop(errStoppedWithSavepoint)
}

// everyTaskCommitted reports whether every task acted on the completion of
// checkpoint id, or has finished.
func (c *coordinator) everyTaskCommitted(id int64) bool {
	for _, t := range c.tasks {
		if t.committedUpTo.Load() < id && !t.finished.Load() {
			return false
		}
	}
	return true
}

// someTaskFinished reports whether a task that has not acknowledged p has
// finished (p can never complete).
func (c *coordinator) someTaskFinished(p *pendingCheckpoint) bool {
	for _, t := range c.tasks {
		if !p.acked[t] && t.finished.Load() {
			return true
		}
	}
	return false
}

func newCoordinator(j *Job, tasks []*task, fail func(error), stop context.CancelCauseFunc) *coordinator {
	c := &coordinator{job: j, tasks: tasks, acks: make(chan ack, len(tasks)), fail: fail, stop: stop}
	for _, t := range tasks {
		if t.reader != nil {
			c.sources = append(c.sources, t)
		}
		t.coord = c
	}
	c.mu.targets = map[int64]checkpointTarget{}
	return c
}

// target returns what checkpoint id is for. Safe from any goroutine.
func (c *coordinator) target(id int64) (checkpointTarget, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.mu.targets[id]
	return t, ok
}

// run is the coordinator's goroutine; it returns when ctx ends.
func (c *coordinator) run(ctx context.Context) {
	cfg := c.job.config.checkpoint
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
				r.answer <- snapshotAnswer{err: fmt.Errorf("exec: no savepoint: the job stopped: %w", context.Cause(ctx))}
			}
			return
		case <-tick:
			switch {
			case c.pending == nil:
				c.trigger(nil)
			case c.someTaskFinished(c.pending):
				c.abortPending(errors.New("a task finished before it took part"))
			}
		case r := <-c.job.requests:
			if c.pending == nil {
				c.trigger(r)
			} else {
				c.queued = append(c.queued, r)
			}
		case a := <-c.acks:
			c.acknowledge(a)
		case <-expired:
			c.failPending(fmt.Errorf("%w: checkpoint %d expired after %s before every task acknowledged it (raise %s)",
				ErrCheckpointDeclined, c.pending.target.id, cfg.Timeout, ConfigCheckpointTimeout))
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
func (c *coordinator) trigger(r *snapshotRequest) {
	for _, t := range c.tasks {
		if t.finished.Load() {
			// Some tasks have finished: they cannot take part, and the
			// end of the input commits what remains.
			if r != nil {
				r.answer <- snapshotAnswer{err: errors.New("exec: no snapshot: some tasks have already finished")}
			}
			return
		}
	}
	s := c.job.store
	id := s.nextID()
	cfg := c.job.config.checkpoint
	target := checkpointTarget{id: id, dir: s.storage.Root}
	if r != nil && !r.checkpoint {
		dir := r.dir
		if dir == "" {
			dir = cfg.SavepointDir
		}
		if dir == "" {
			r.answer <- snapshotAnswer{err: fmt.Errorf("exec: no savepoint directory: give one, or set %s", ConfigSavepointDir)}
			return
		}
		target.savepoint, target.dir = true, newSavepointDir(dir, c.job.id)
	} else if err := s.ensureStorage(); err != nil {
		if r != nil {
			r.answer <- snapshotAnswer{err: err}
		}
		c.recordFailure(CheckpointStats{ID: id, Status: "failed", Err: err, Started: time.Now()})
		return
	}
	now := time.Now()
	c.pending = &pendingCheckpoint{
		target: target, started: now, deadline: now.Add(cfg.Timeout),
		states: map[string][]SubtaskState{}, acked: map[*task]bool{}, request: r,
	}
	c.mu.Lock()
	c.mu.targets[id] = target
	c.mu.Unlock()
	for _, t := range c.sources {
		t.requestBarrier(id)
	}
}

// acknowledge records a task's answer and completes the checkpoint when
// every task has answered.
func (c *coordinator) acknowledge(a ack) {
	p := c.pending
	if p == nil || a.id != p.target.id {
		return // an aborted checkpoint's late answer
	}
	if a.err != nil {
		c.failPending(fmt.Errorf("%w: checkpoint %d: %w", ErrCheckpointDeclined, a.id, a.err))
		return
	}
	p.acked[a.task] = true
	for uid, st := range a.states {
		p.states[uid] = append(p.states[uid], st)
	}
	if len(p.acked) < len(c.tasks) {
		return
	}
	if err := c.complete(p); err != nil {
		c.failPending(fmt.Errorf("%w: checkpoint %d: %w", ErrCheckpointDeclined, p.target.id, err))
	}
}

// complete writes the _metadata of p, makes it the latest checkpoint, and
// tells every task.
func (c *coordinator) complete(p *pendingCheckpoint) error {
	g := c.job.g
	m := &Metadata{
		Version: MetadataVersion, JobID: c.job.id, JobName: g.Name, CheckpointID: p.target.id,
		Savepoint: p.target.savepoint, Timestamp: p.started, MaxParallelism: g.MaxParallelism,
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
	dir := p.target.dir
	if !p.target.savepoint {
		dir = c.job.store.storage.CheckpointDir(p.target.id)
	}
	if err := writeMetadata(dir, m); err != nil {
		return err
	}
	c.pending = nil
	c.failures = 0
	c.forget(p.target.id)
	stats := CheckpointStats{ID: p.target.id, Savepoint: p.target.savepoint, Status: "completed", Path: dir,
		Started: p.started, Duration: time.Since(p.started)}
	if !p.target.savepoint {
		if err := c.job.store.add(m, dir); err != nil {
			_ = os.Remove(filepath.Join(dir, "_metadata"))
			return err
		}
	}
	c.job.record(stats)
	c.lastCompleted = p.target.id
	if p.request != nil && p.request.stop {
		c.stopped = true
		for _, t := range c.sources {
			t.stopping.Store(true)
		}
	}
	for _, t := range c.tasks {
		t.notifyComplete(p.target.id)
	}
	if p.request != nil {
		p.request.answer <- snapshotAnswer{path: dir}
	}
	return nil
}

// failPending aborts the pending checkpoint as failed; too many failures
// in a row fail the job.
func (c *coordinator) failPending(err error) {
	p := c.pending
	c.pending = nil
	c.discard(p)
	if p.request != nil {
		p.request.answer <- snapshotAnswer{err: err}
		if p.target.savepoint {
			c.job.record(CheckpointStats{ID: p.target.id, Savepoint: true, Status: "failed", Err: err, Started: p.started, Duration: time.Since(p.started)})
			return // a failed savepoint does not count against the job
		}
	}
	c.recordFailure(CheckpointStats{ID: p.target.id, Status: "failed", Err: err, Started: p.started, Duration: time.Since(p.started)})
}

func (c *coordinator) recordFailure(s CheckpointStats) {
	c.job.record(s)
	c.failures++
	if tolerable := c.job.config.checkpoint.TolerableFailures; c.failures > tolerable {
		c.fail(fmt.Errorf("%w (%d failures in a row, %s=%d)", s.Err, c.failures, ConfigTolerableFailures, tolerable))
	}
}

// abortPending drops the pending checkpoint without counting a failure.
func (c *coordinator) abortPending(cause error) {
	p := c.pending
	if p == nil {
		return
	}
	c.pending = nil
	c.discard(p)
	err := fmt.Errorf("exec: checkpoint %d aborted: %w", p.target.id, cause)
	if p.request != nil {
		p.request.answer <- snapshotAnswer{err: err}
	}
	c.job.record(CheckpointStats{ID: p.target.id, Savepoint: p.target.savepoint, Status: "aborted", Err: err, Started: p.started, Duration: time.Since(p.started)})
}

// forget drops the target of a checkpoint that completed or was given up:
// tasks ask for it only until they acknowledge.
func (c *coordinator) forget(id int64) {
	c.mu.Lock()
	delete(c.mu.targets, id)
	c.mu.Unlock()
}

// discard removes what a checkpoint that will not complete wrote of its
// own (its chk-<n> or savepoint directory; shared files are swept by the
// store).
func (c *coordinator) discard(p *pendingCheckpoint) {
	c.forget(p.target.id)
	if p.target.savepoint {
		_ = os.RemoveAll(p.target.dir)
	} else {
		_ = c.job.store.storage.RemoveCheckpoint(p.target.id)
	}
}

// checkpointStore holds a job's completed checkpoints across attempts.
type checkpointStore struct {
	storage  state.Storage
	retained int
	lazy     bool

	mu struct {
		sync.Mutex
		next      int64
		completed []completedCheckpoint // oldest first
		storageOK bool
		// registry counts the references of retained checkpoints to
		// keyed state files in shared/.
		registry *state.SharedRegistry
	}
}

type completedCheckpoint struct {
	meta *Metadata
	dir  string
}

func newCheckpointStore(cfg CheckpointConfig, jobID string) *checkpointStore {
	s := &checkpointStore{retained: cfg.Retained, lazy: cfg.CreateDirsOnFirstCheckpoint}
	if cfg.Dir != "" {
		s.storage = state.Storage{Root: filepath.Join(cfg.Dir, jobID)}
	}
	s.mu.next = 1
	return s
}

func (s *checkpointStore) nextID() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.mu.next
	s.mu.next++
	return id
}

// continueAfter makes checkpoint ids continue after a restored one's.
func (s *checkpointStore) continueAfter(id int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.next = max(s.mu.next, id+1)
}

// ensureStorage creates the storage directories once.
func (s *checkpointStore) ensureStorage() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.storageOK {
		return nil
	}
	if s.storage.Root == "" {
		return fmt.Errorf("%w: no checkpoint storage: set %s", ErrCheckpointDeclined, ConfigCheckpointDir)
	}
	if err := s.storage.Init(); err != nil {
		return fmt.Errorf("%w: %w", ErrCheckpointDeclined, err)
	}
	s.mu.storageOK = true
	s.mu.registry = state.NewSharedRegistry(s.storage)
	return nil
}

// add makes m the latest completed checkpoint and removes the oldest
// beyond the retained number, with the shared files only they used.
func (s *checkpointStore) add(m *Metadata, dir string) error {
	handles, err := keyedHandles(m)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// Register before releasing: files the new checkpoint shares with a
	// subsumed one stay.
	if err := s.mu.registry.Register(m.CheckpointID, handles); err != nil {
		return err
	}
	s.mu.completed = append(s.mu.completed, completedCheckpoint{meta: m, dir: dir})
	if extra := len(s.mu.completed) - s.retained; extra > 0 {
		for _, c := range s.mu.completed[:extra] {
			_ = s.mu.registry.Release(c.meta.CheckpointID)
			_ = s.storage.RemoveCheckpoint(c.meta.CheckpointID)
		}
		s.mu.completed = append([]completedCheckpoint(nil), s.mu.completed[extra:]...)
	}
	return nil
}

// sweep deletes the shared files no retained checkpoint references (those
// of checkpoints that never completed). Only while no task runs.
func (s *checkpointStore) sweep() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.registry != nil {
		_ = s.mu.registry.Sweep()
	}
}

// keyedHandles collects the keyed state handles of a snapshot.
func keyedHandles(m *Metadata) ([]state.Handle, error) {
	var hs []state.Handle
	for _, op := range m.Operators {
		for _, st := range op.Subtasks {
			if st.Keyed == nil {
				continue
			}
			var h state.Handle
			if err := json.Unmarshal(st.Keyed, &h); err != nil {
				return nil, fmt.Errorf("operator %q subtask %d: invalid keyed state handle: %w", op.UID, st.Subtask, err)
			}
			hs = append(hs, h)
		}
	}
	return hs, nil
}

// latest returns the latest completed checkpoint, if any.
func (s *checkpointStore) latest() (*Metadata, string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.mu.completed) == 0 {
		return nil, "", false
	}
	c := s.mu.completed[len(s.mu.completed)-1]
	return c.meta, c.dir, true
}

// discardAll deletes the job's checkpoint storage (a finished job, or a
// canceled one without RetainOnCancel).
func (s *checkpointStore) discardAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.completed = nil
	if s.storage.Root != "" && s.mu.storageOK {
		_ = os.RemoveAll(s.storage.Root)
	}
}

// operatorsByUID indexes a graph's operators.
func operatorsByUID(g *plan.Graph) map[string]*plan.Operator {
	m := map[string]*plan.Operator{}
	for _, op := range g.Operators {
		m[op.UID] = op
	}
	return m
}
