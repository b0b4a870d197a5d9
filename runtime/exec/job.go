package exec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync"

	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/internal/logging"
	"github.com/flinkgo/flinkgo/runtime/plan"
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
	// StateDir holds the working directories of keyed state backends
	// (Pebble databases, a cache of what checkpoints hold). Default: the
	// system's temporary directory.
	StateDir string
	// KeyedCacheGroups is how many groups a keyed aggregation subtask keeps
	// in memory after a checkpoint wrote them to its state backend; beyond
	// it they are dropped from memory and read back as their keys recur.
	// Default 65536.
	KeyedCacheGroups int
	// JobID names the job (its checkpoints go under <dir>/<JobID>).
	// Default: a random id.
	JobID string
	// OnStateChange, when set, is called on every change of the job's
	// state (see JobState), in order, from the goroutine that made it. It
	// must not block.
	OnStateChange func(StateChange)
	// Logger receives the job's logs, tagged with its id: state changes
	// (info), restarts with their cause and checkpoint failures (warn),
	// completed checkpoints (debug); the state backends' and, unless
	// Runner.Logger is set, the Python workers'. Nil discards them.
	Logger *slog.Logger
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
	if o.KeyedCacheGroups == 0 {
		o.KeyedCacheGroups = 1 << 16
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

// Job is a started run: one attempt after another (a failure restarts the
// job from its latest completed checkpoint when the restart strategy
// allows), until it finishes, is canceled, or fails for good.
type Job struct {
	g         *plan.Graph
	opts      Options
	config    runtimeConfig
	id        string
	count     []counters
	lifecycle *lifecycle
	store     *checkpointStore
	restarts  *restarter
	// requests carries savepoint and checkpoint requests to the running
	// attempt's coordinator.
	requests chan *snapshotRequest
	// stopWatch stops the watch of the caller's ctx; watchDone is closed
	// when a watch that fired has moved the job to Canceling.
	stopWatch func() bool
	watchDone chan struct{}
	done      chan struct{}
	metrics   *Metrics
	err       error

	mu struct {
		sync.Mutex
		tasks       int // goroutines running operators: one per chain subtask
		attempts    int
		checkpoints []CheckpointStats
	}
}

// Start builds every task of g and starts them; see Run. Errors in
// building (an expression that does not compile, a worker that cannot be
// configured, a snapshot to restore that does not fit) are returned before
// anything runs.
func Start(ctx context.Context, g *plan.Graph, opts Options) (*Job, error) {
	opts = opts.withDefaults()
	cfg, err := parseConfig(g.Config)
	if err != nil {
		return nil, err
	}
	opts = cfg.withBundle(opts)
	j := &Job{
		g: g, opts: opts, config: cfg, id: opts.JobID, count: make([]counters, len(g.Operators)),
		restarts: newRestarter(cfg.restart),
		requests: make(chan *snapshotRequest), watchDone: make(chan struct{}), done: make(chan struct{}),
	}
	if j.id == "" {
		j.id = NewJobID()
	}
	j.opts.Logger = logging.OrDiscard(opts.Logger).With("job", j.id)
	if j.opts.Runner.Logger == nil {
		j.opts.Runner.Logger = j.opts.Logger
	}
	j.lifecycle = newLifecycle(logStateChanges(j.opts.Logger, g.Name, opts.OnStateChange))
	j.store = newCheckpointStore(cfg.checkpoint, j.id)
	ctx = compute.WithAllocator(ctx, opts.Allocator)
	a, err := j.firstAttempt(ctx)
	if err != nil {
		j.lifecycle.move(Failed, Created)
		return nil, err
	}
	j.lifecycle.move(Running, Created)
	j.stopWatch = context.AfterFunc(ctx, func() {
		defer close(j.watchDone)
		j.lifecycle.move(Canceling, Running, Restarting)
	})
	a.start()
	go j.run(ctx, a)
	return j, nil
}

// firstAttempt prepares the checkpoint storage and the snapshot to start
// from, and builds the first attempt.
func (j *Job) firstAttempt(ctx context.Context) (*attempt, error) {
	cp := j.config.checkpoint
	if cp.Interval > 0 && !cp.CreateDirsOnFirstCheckpoint {
		if err := j.store.ensureStorage(); err != nil {
			return nil, fmt.Errorf("exec: %w", err)
		}
	}
	var from *restorePoint
	if path := j.config.restore.Path; path != "" {
		m, base, err := LoadMetadata(path)
		if err != nil {
			return nil, err
		}
		from = &restorePoint{meta: m, base: base}
		if !m.Savepoint {
			from.base = filepath.Dir(base) // a checkpoint's paths are relative to its storage root
		}
		if err := checkRestore(j.g, m, j.config.restore); err != nil {
			return nil, err
		}
		j.store.continueAfter(m.CheckpointID)
	}
	return j.newAttempt(ctx, from)
}

// run drives attempts until the job ends.
func (j *Job) run(ctx context.Context, a *attempt) {
	for {
		err := a.wait()
		if err == nil {
			err = a.publishFinalParts()
		}
		if err == nil || errors.Is(err, errStoppedWithSavepoint) {
			j.end(ctx, nil, Finished, Running, Canceling)
			return
		}
		if ctx.Err() != nil {
			j.end(ctx, err, Canceled, Canceling)
			return
		}
		if j.lifecycle.state() != Restarting {
			j.end(ctx, err, Failed, Running, Failing)
			return
		}
		j.opts.Logger.Warn("job restarting after a failure", "cause", err, "attempt", j.Attempts())
		var next *attempt
		next, err = j.restart(ctx, err)
		if next == nil {
			if ctx.Err() != nil {
				j.end(ctx, context.Cause(ctx), Canceled, Canceling)
			} else {
				j.end(ctx, err, Failed, Restarting)
			}
			return
		}
		a = next
	}
}

// restart waits the restart strategy's delay and starts a new attempt from
// the latest completed checkpoint (or the snapshot the job started from).
// It returns nil when the job must stop instead, with the reason.
func (j *Job) restart(ctx context.Context, cause error) (*attempt, error) {
	for {
		select {
		case <-time.After(j.restarts.nextDelay()):
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
		j.store.sweep() // no task runs: uploads of unfinished checkpoints go
		from := j.latestRestorePoint()
		a, err := j.newAttempt(ctx, from)
		if err == nil {
			if !j.lifecycle.move(Running, Restarting) { // canceled meanwhile
				a.release()
				return nil, context.Cause(ctx)
			}
			a.start()
			return a, nil
		}
		err = fmt.Errorf("exec: restarting after %v: %w", cause, err)
		j.opts.Logger.Warn("job restart failed", "error", err)
		if !j.restarts.allow() {
			return nil, err
		}
		cause = err
	}
}

// latestRestorePoint is where a restart resumes from.
func (j *Job) latestRestorePoint() *restorePoint {
	if m, dir, ok := j.store.latest(); ok {
		return &restorePoint{meta: m, base: filepath.Dir(dir)}
	}
	if path := j.config.restore.Path; path != "" {
		if m, base, err := LoadMetadata(path); err == nil {
			if !m.Savepoint {
				base = filepath.Dir(base)
			}
			return &restorePoint{meta: m, base: base}
		}
	}
	return nil
}

// onFailure decides, on an attempt's first failure, whether the job
// restarts or fails.
func (j *Job) onFailure() {
	if j.restarts.allow() {
		j.lifecycle.move(Restarting, Running)
	} else {
		j.lifecycle.move(Failing, Running)
	}
}

// end records the job's outcome, and keeps or deletes its checkpoints as
// Flink does: deleted when it finishes, kept when it fails, and when it is
// canceled only with RETAIN_ON_CANCELLATION.
func (j *Job) end(ctx context.Context, err error, to JobState, from ...JobState) {
	if !j.stopWatch() {
		<-j.watchDone // Canceling is reported before the end
	} else if ctx.Err() != nil {
		// Canceled, but the watch has not run yet (and now never will).
		j.lifecycle.move(Canceling, Running, Restarting)
	}
	switch {
	case to == Finished, to == Canceled && !j.config.checkpoint.RetainOnCancel:
		j.store.discardAll()
	default:
		j.store.sweep()
	}
	j.metrics, j.err = j.Snapshot(), err
	j.lifecycle.move(to, from...)
	close(j.done)
}

// State returns the job's current state. Safe at any time.
func (j *Job) State() JobState { return j.lifecycle.state() }

// ID returns the job's id (Options.JobID, else a random one); checkpoints
// go under <checkpoint dir>/<id>.
func (j *Job) ID() string { return j.id }

// History returns every state the job has been in, with when it entered
// it, starting with Created.
func (j *Job) History() []StateChange { return j.lifecycle.history() }

// Checkpoints returns the job's checkpoints and savepoints so far, oldest
// first. Safe at any time.
func (j *Job) Checkpoints() []CheckpointStats {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]CheckpointStats(nil), j.mu.checkpoints...)
}

// Attempts returns how many attempts the job has started (1 + restarts).
func (j *Job) Attempts() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.mu.attempts
}

func (j *Job) record(s CheckpointStats) {
	kind := "checkpoint"
	if s.Savepoint {
		kind = "savepoint"
	}
	switch s.Status {
	case "completed":
		j.opts.Logger.Debug(kind+" completed", "id", s.ID, "path", s.Path, "duration", s.Duration)
	case "aborted": // the job stopped or a task finished first: routine
		j.opts.Logger.Info(kind+" aborted", "id", s.ID, "cause", s.Err)
	default:
		j.opts.Logger.Warn(kind+" "+s.Status, "id", s.ID, "error", s.Err)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.mu.checkpoints = append(j.mu.checkpoints, s)
}

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

// TriggerSavepoint takes a savepoint into dir (or the configured savepoint
// directory when dir is "") and returns its path; the job keeps running.
// It blocks until the savepoint completed or failed, or ctx ends.
func (j *Job) TriggerSavepoint(ctx context.Context, dir string) (string, error) {
	return j.savepoint(ctx, dir, false)
}

// TriggerCheckpoint takes a checkpoint now (as a periodic one, into the
// checkpoint storage) and returns its chk-<n> directory once it completed.
func (j *Job) TriggerCheckpoint(ctx context.Context) (string, error) {
	return j.request(ctx, &snapshotRequest{checkpoint: true})
}

// StopWithSavepoint takes a savepoint, lets every sink commit up to it,
// and stops the job, which then ends FINISHED (as Flink's stop with
// savepoint). It returns the savepoint's path once the savepoint
// completed; Wait for the job's end.
func (j *Job) StopWithSavepoint(ctx context.Context, dir string) (string, error) {
	return j.savepoint(ctx, dir, true)
}

func (j *Job) savepoint(ctx context.Context, dir string, stop bool) (string, error) {
	return j.request(ctx, &snapshotRequest{dir: dir, stop: stop})
}

func (j *Job) request(ctx context.Context, r *snapshotRequest) (string, error) {
	r.answer = make(chan snapshotAnswer, 1)
	select {
	case j.requests <- r:
	case <-j.done:
		return "", errors.New("exec: no snapshot: the job has ended")
	case <-ctx.Done():
		return "", context.Cause(ctx)
	}
	select {
	case a := <-r.answer:
		return a.path, a.err
	case <-ctx.Done():
		return "", context.Cause(ctx)
	}
}
