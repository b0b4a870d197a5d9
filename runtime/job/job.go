package job

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"sync"

	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/connectors/builtin"
	"github.com/flinkgo/flinkgo/internal/beneath"
	"github.com/flinkgo/flinkgo/internal/logging"
	"github.com/flinkgo/flinkgo/internal/objstore"
	"github.com/flinkgo/flinkgo/runtime/autoscaler"
	"github.com/flinkgo/flinkgo/runtime/checkpoint"
	"github.com/flinkgo/flinkgo/runtime/config"
	"github.com/flinkgo/flinkgo/runtime/connector"
	"github.com/flinkgo/flinkgo/runtime/metrics"
	"github.com/flinkgo/flinkgo/runtime/operator"
	"github.com/flinkgo/flinkgo/runtime/operators"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/runtime/task"
	"github.com/flinkgo/flinkgo/udf/bridge"
	"github.com/flinkgo/flinkgo/udf/bridge/pluginrunner"
)

// Options tune a run. Zero fields take defaults.
type Options struct {
	// Runner is the template of every Python worker's options (interpreter,
	// logger, timeouts).
	Runner pluginrunner.Options
	// NewRunner starts the worker of one UDF operator subtask from its
	// options (the template Runner, completed). Default
	// pluginrunner.NewRunner; tests give a fake.
	NewRunner func(pluginrunner.Options) (bridge.Runner, error)
	// BundleSize and BundleTime: see package bundle.
	BundleSize int
	BundleTime time.Duration
	// ChannelCapacity is how many batches an inbox holds before producers
	// block. Default 4.
	ChannelCapacity int
	// SourceBatchRows is the largest batch a source reads. Default 10000.
	SourceBatchRows int
	// Paths opens the files of file sources and the directories of file
	// sinks and savepoints that clients named; nil opens them as named
	// (see package beneath).
	Paths beneath.Paths
	// Allocator holds every batch. Default memory.DefaultAllocator.
	Allocator memory.Allocator
	// Stdout receives print sinks' rows. Default os.Stdout.
	Stdout io.Writer
	// Collect receives collect sinks' batches (retained: it releases them),
	// from every sink subtask's goroutine at once: it must be safe for
	// concurrent use.
	Collect func(op *plan.Operator, subtask int, b arrow.RecordBatch) error
	// CollectBatchBytes, when above 0, makes collect sinks hand Collect
	// batches of about this many bytes, joined from their input (and at
	// each checkpoint and at the end): fewer, larger batches for a client
	// that reads them when the job ends. 0 hands each batch over as it
	// arrives, as a job whose input never ends needs.
	CollectBatchBytes int
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
	// Registry, when set, builds the job's operators instead of
	// operators.Registry of these options (whose operator fields, Runner to
	// Collect and KeyedCacheGroups, then go unused): a program embedding
	// the runtime replaces a row, as package pipeline its source.
	Registry *operator.Registry
	// Workers, when set, is the Python workers each listed UDF or
	// map_batches operator (by uid) starts with, spread over its subtasks
	// (at least one each), as an in-place rescale leaves them: package
	// pipeline runs a chain in one subtask over a pool of workers whose
	// results leave in input order.
	Workers map[string]int
	// Connectors has the connectors of the job's sources and sinks
	// (default connectors/builtin's): a program embedding the runtime adds
	// its own with its With. A custom Registry's sources and sinks should
	// be built with the same.
	Connectors *connector.Registry
	// OnStateChange, when set, is called on every change of the job's
	// state (see JobState), in order, from the goroutine that made it. It
	// must not block.
	OnStateChange func(StateChange)
	// Logger receives the job's logs, tagged with its id: state changes
	// (info), restarts with their cause and checkpoint failures (warn),
	// completed checkpoints (debug); the state backends' and, unless
	// Runner.Logger is set, the Python workers'. Nil discards them.
	Logger *slog.Logger
	// Replan plans the job again with the parallelism of some operators
	// changed, by uid (plan.Options.Parallelism), keeping its max
	// parallelism: Job.Rescale needs it, and refuses without it. The
	// server sets it from the job's plan.
	Replan func(parallelism map[string]int) (*plan.Graph, error)
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
	// LateRecordsDropped counts the rows a window aggregation dropped as
	// too late for every window they belong to (Flink's
	// numLateRecordsDropped).
	LateRecordsDropped int64
}

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
	opts      Options
	config    config.Runtime
	registry  *operator.Registry
	id        string
	count     []operator.Counters
	lifecycle *lifecycle
	store     *checkpoint.Store
	// restored is the snapshot of config.Restore.Path, opened at the start
	// and kept open (and pinned) until the job ends, for the restarts
	// before its first checkpoint.
	restored *checkpoint.RestorePoint
	restarts *restarter
	// requests carries savepoint and checkpoint requests to the running
	// attempt's coordinator.
	requests chan *checkpoint.Request
	// stopWatch stops the watch of the caller's ctx; watchDone is closed
	// when a watch that fired has moved the job to Canceling.
	stopWatch func() bool
	watchDone chan struct{}
	done      chan struct{}
	metrics   *Metrics
	err       error
	// workers: the worker pools of the stateless UDF operators, which an
	// in-place rescale resizes (rescale.go).
	workers *operator.WorkerPools
	// previous: what the sinks prepared at submission (what file sinks in
	// mode "overwrite" found), told once the job's output is committed.
	previous []connector.Prepared
	// autoscalerStop ends the autoscaler's loop (autoscale.go);
	// autoscalerDone waits for it.
	autoscalerStop chan struct{}
	autoscalerDone sync.WaitGroup

	mu struct {
		sync.Mutex
		tasks       int // goroutines running operators: one per chain subtask
		attempts    int
		checkpoints []CheckpointStats
		// graph is the graph the job runs; a rescale replaces it.
		graph *plan.Graph
		// taskMetrics: per chain head operator ID of graph, its subtasks'
		// metrics (nil for chained operators); they outlive attempts and
		// are replaced with the graph.
		taskMetrics [][]*metrics.Task
		// udfMetrics: the UDF operators' subtasks' metrics; as taskMetrics.
		udfMetrics *metrics.UDFs
		// requirements: the parallelism by uid that rescales asked for.
		requirements map[string]int
		// pending: the rescale waiting for its checkpoint; rescales: the
		// rescales that ended, oldest first.
		pending  *pendingRescale
		rescales []RescaleInfo
		// inPlace: the in-place rescales waiting for their new workers.
		inPlace []*RescaleInfo
		// executingSince: when the latest attempt started (the rescale
		// cooldown counts from it).
		executingSince time.Time
		// attempt is the latest attempt started.
		attempt *attempt
		// decisions: the autoscaler's, oldest first.
		decisions []autoscaler.Decision
		// failures: the exception history, oldest first, at most
		// web.exception-history-size; failuresDropped counts the older
		// ones dropped. failingSince: when the failure that fails the job
		// happened (it is recorded at the end, as the job's error).
		failures        []Failure
		failuresDropped int
		failingSince    time.Time
	}
}

// Start builds every task of g and starts them; see Run. Errors in
// building (an expression that does not compile, a worker that cannot be
// configured, a snapshot to restore that does not fit) are returned before
// anything runs.
func Start(ctx context.Context, g *plan.Graph, opts Options) (*Job, error) {
	opts = opts.withDefaults()
	cfg, err := config.Parse(g.Config)
	if err != nil {
		return nil, err
	}
	// The job's bundle settings override the runtime's.
	if cfg.BundleSize > 0 {
		opts.BundleSize = cfg.BundleSize
	}
	if cfg.BundleTime > 0 {
		opts.BundleTime = cfg.BundleTime
	}
	// Workers the job leaves idle (when the runtime gave it a pool).
	opts.Runner.IdleTimeout, opts.Runner.MaxIdle = cfg.WorkerIdleTimeout, cfg.WorkerMaxIdle
	if cfg.WorkerTransport != "" {
		if opts.Runner.Transport, err = pluginrunner.ParseTransport(cfg.WorkerTransport); err != nil {
			return nil, err
		}
	}
	j := &Job{
		opts: opts, config: cfg, id: opts.JobID, count: make([]operator.Counters, len(g.Operators)),
		restarts: newRestarter(cfg.Restart), workers: operator.NewWorkerPools(),
		requests: make(chan *checkpoint.Request), watchDone: make(chan struct{}), done: make(chan struct{}),
	}
	if j.id == "" {
		j.id = NewJobID()
	}
	if err := startWorkers(g, j.workers, opts.Workers); err != nil {
		return nil, err
	}
	j.mu.graph = g
	j.mu.taskMetrics, j.mu.udfMetrics = newTaskMetrics(g), metrics.NewUDFs()
	j.opts.Logger = logging.OrDiscard(opts.Logger).With("job", j.id)
	if j.opts.Runner.Logger == nil {
		j.opts.Runner.Logger = j.opts.Logger
	}
	if j.opts.Connectors == nil {
		j.opts.Connectors = builtin.Registry()
	}
	j.registry = opts.Registry
	if j.registry == nil {
		j.registry = operators.Registry(j.operatorOptions())
	}
	j.lifecycle = newLifecycle(logStateChanges(j.opts.Logger, g.Name, opts.OnStateChange))
	j.store = checkpoint.NewStore(cfg.Checkpoint, j.id, opts.Paths)
	ctx = compute.WithAllocator(ctx, opts.Allocator)
	a, err := j.firstAttempt(ctx)
	if err != nil {
		err = j.showNames(err)
		j.closeDirs()
		j.lifecycle.move(Failed, Created)
		return nil, err
	}
	j.lifecycle.move(Running, Created)
	j.stopWatch = context.AfterFunc(ctx, func() {
		defer close(j.watchDone)
		j.lifecycle.move(Canceling, Running, Restarting)
	})
	a.start()
	j.startAutoscaler(ctx)
	go j.run(ctx, a)
	return j, nil
}

// startWorkers records the workers Options.Workers gives operators of g.
func startWorkers(g *plan.Graph, pools *operator.WorkerPools, workers map[string]int) error {
	for _, uid := range slices.Sorted(maps.Keys(workers)) {
		i := slices.IndexFunc(g.Operators, func(op *plan.Operator) bool { return op.UID == uid })
		if i < 0 || (g.Operators[i].Kind != plan.KindUDF && g.Operators[i].Kind != plan.KindMapBatches) {
			return fmt.Errorf("job: Options.Workers names uid %q, which is no UDF or map_batches operator of the job", uid)
		}
		if err := pools.Resize(uid, g.Operators[i].Parallelism, workers[uid]); err != nil {
			return fmt.Errorf("job: Options.Workers: %w", err)
		}
	}
	return nil
}

// firstAttempt prepares the checkpoint storage and the snapshot to start
// from, and builds the first attempt.
func (j *Job) firstAttempt(ctx context.Context) (*attempt, error) {
	cp := j.config.Checkpoint
	if cp.S3Set {
		// The S3 client is the runtime's (package objstore): a job
		// giving other s3.* settings than one before it is refused.
		if err := objstore.Configure(objectStoreOptions(cp.S3)); err != nil {
			return nil, fmt.Errorf("job: %w", err)
		}
	}
	if cp.Interval > 0 && !cp.CreateDirsOnFirstCheckpoint {
		if err := j.store.EnsureStorage(); err != nil {
			return nil, fmt.Errorf("job: %w", err)
		}
	}
	// Once per job, before any task writes; a restore finds its own parts.
	g := j.graph()
	prev, err := operators.PrepareSinks(j.opts.Connectors, g, j.config.Restore.Path != "", j.opts.Paths)
	if err != nil {
		return nil, fmt.Errorf("job: %w", err)
	}
	j.previous = prev
	var from *checkpoint.RestorePoint
	if path := j.config.Restore.Path; path != "" {
		from, err = checkpoint.OpenRestorePoint(j.opts.Paths, path)
		if err != nil {
			return nil, err
		}
		j.restored = from
		if err := checkRestore(g, from.Meta, j.config.Restore); err != nil {
			return nil, err
		}
		j.store.ContinueAfter(from.Meta.CheckpointID)
	}
	return j.newAttempt(ctx, from)
}

// run drives attempts until the job ends.
func (j *Job) run(ctx context.Context, a *attempt) {
	defer func() {
		// A bug between attempts fails this job; the process lives on.
		if r := recover(); r != nil {
			j.end(ctx, fmt.Errorf("job: %w", task.PanicError(r)), Failed, Running, Failing, Restarting, Canceling)
		}
	}()
	for {
		err := a.wait()
		if err == nil {
			err = a.publishFinalParts()
		}
		if err == nil {
			err = j.deletePrevious()
		}
		if err == nil || errors.Is(err, checkpoint.ErrStoppedWithSavepoint) {
			j.end(ctx, nil, Finished, Running, Canceling)
			return
		}
		if ctx.Err() != nil {
			// A task's bare "context canceled" says nothing: the cancel's
			// cause says who canceled. A real failure that raced the
			// cancel (a worker's exit) stays the job's error.
			if errors.Is(err, context.Canceled) {
				err = context.Cause(ctx)
			}
			j.end(ctx, err, Canceled, Canceling)
			return
		}
		if j.lifecycle.state() != Restarting {
			if j.lifecycle.state() == Failing {
				err = j.restarts.exhausted(err)
			}
			j.end(ctx, err, Failed, Running, Failing)
			return
		}
		var next *attempt
		if a.rescale != nil {
			next, err = j.rescaleAttempt(ctx, a.rescale)
		} else {
			j.opts.Logger.Warn("job restarting after a failure", "cause", err, "attempt", j.Attempts())
			next, err = j.restart(ctx, err)
		}
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
		j.store.Sweep() // no task runs: uploads of unfinished checkpoints go
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
		err = fmt.Errorf("job: restarting after %v: %w", cause, err)
		j.opts.Logger.Warn("job restart failed", "error", err)
		if !j.restarts.allow() {
			return nil, j.restarts.exhausted(err)
		}
		j.recordFailure(newFailure(err, time.Now(), true))
		cause = err
	}
}

// latestRestorePoint is where a restart resumes from.
func (j *Job) latestRestorePoint() *checkpoint.RestorePoint {
	if m, dir, ok := j.store.Latest(); ok {
		return &checkpoint.RestorePoint{Meta: m, Base: checkpoint.ParentDir(dir)}
	}
	return j.restored
}

// onFailure decides, on an attempt's first failure, whether the job
// restarts or fails. A failure the job restarts after goes into its
// history now; the one that fails it, when it ends (end).
func (j *Job) onFailure(err error) {
	at := time.Now()
	if j.restarts.allow() {
		if j.lifecycle.move(Restarting, Running) {
			j.recordFailure(newFailure(err, at, true))
		}
	} else if j.lifecycle.move(Failing, Running) {
		j.mu.Lock()
		j.mu.failingSince = at
		j.mu.Unlock()
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
	case to == Finished, to == Canceled && !j.config.Checkpoint.RetainOnCancel:
		j.store.DiscardAll()
	default:
		j.store.Sweep()
	}
	err = j.showNames(err)
	j.closeDirs()
	j.metrics, j.err = j.Snapshot(), err
	if to == Failed {
		j.recordFinalFailure(err)
	}
	j.stopAutoscaler() // before the pending rescale ends: it asks for none after
	j.endPendingRescale()
	j.lifecycle.move(to, from...)
	close(j.done)
}

// showNames turns the paths the job worked through (the pinned checkpoint
// storage and restore directories) back into the user's names in err.
func (j *Job) showNames(err error) error {
	return j.restored.ShowNames(j.store.ShowNames(err))
}

// closeDirs releases the checkpoint storage and restore directories the
// job kept open; no task runs.
func (j *Job) closeDirs() {
	_ = j.store.Close()
	_ = j.restored.Close()
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
		// The sinks publish this checkpoint's parts: the new output is
		// committed. A failure is retried at the next one, or at the end.
		if err := j.deletePrevious(); err != nil {
			j.opts.Logger.Warn("deleting the output replaced by mode=\"overwrite\" failed", "error", err)
		}
	case "aborted": // the job stopped or a task finished first: routine
		j.opts.Logger.Info(kind+" aborted", "id", s.ID, "cause", s.Err)
	default:
		j.opts.Logger.Warn(kind+" "+s.Status, "id", s.ID, "error", s.Err)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.mu.checkpoints = append(j.mu.checkpoints, s)
}

// deletePrevious deletes what the file sinks in mode "overwrite" found at
// submission: the job's output is committed (a completed checkpoint, or
// the end of the job).
func (j *Job) deletePrevious() error {
	var errs []error
	for _, p := range j.previous {
		errs = append(errs, p.OutputCommitted())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("job: %w", err)
	}
	return nil
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
	for _, op := range j.graph().Operators {
		m.Operators = append(m.Operators, OperatorMetrics{
			Name: op.Name, UID: op.UID, Parallelism: op.Parallelism, Kind: op.Kind.String(),
			RowsIn: j.count[op.ID].In.Load(), RowsOut: j.count[op.ID].Out.Load(),
			LateRecordsDropped: j.count[op.ID].LateRecordsDropped.Load(),
		})
	}
	return m
}

// newTaskMetrics makes fresh metrics for every subtask of g's chains.
func newTaskMetrics(g *plan.Graph) [][]*metrics.Task {
	m := make([][]*metrics.Task, len(g.Operators))
	for _, head := range task.ChainHeads(g) {
		for range head.Parallelism {
			m[head.ID] = append(m[head.ID], metrics.NewTask())
		}
	}
	return m
}

// Vertex is one job vertex (Flink's): a chain of operators run as one
// task per subtask.
type Vertex struct {
	// Head is the chain's first operator; Operators the chain, head first.
	Head      *plan.Operator
	Operators []*plan.Operator
	// Tasks are the subtasks' metrics, by subtask index.
	Tasks []*metrics.Task
	// UDFs are the metrics of the chain's operators that run Python
	// workers, in chain order.
	UDFs []UDFOperator
}

// VertexID is the id of the vertex whose chain starts with the operator
// of uid, as the REST API and the job's final metrics name it: 32 hex
// digits (Flink's JobVertexID), stable across runs of the same plan.
func VertexID(uid string) string {
	sum := md5.Sum([]byte(uid))
	return hex.EncodeToString(sum[:])
}

// UDFOperator is the UDF metrics of one operator with Python workers.
type UDFOperator struct {
	Op *plan.Operator
	// Subtasks are its subtasks' metrics, by subtask index.
	Subtasks []*metrics.UDF
}

// Vertices returns the job's vertices in topological order of their
// heads. Their metrics are live: safe to read at any time.
func (j *Job) Vertices() []Vertex {
	j.mu.Lock()
	g, taskMetrics, udfs := j.mu.graph, j.mu.taskMetrics, j.mu.udfMetrics
	j.mu.Unlock()
	var vs []Vertex
	for _, head := range task.ChainHeads(g) {
		v := Vertex{Head: head, Tasks: taskMetrics[head.ID]}
		for _, op := range g.Operators {
			if op.ChainID == head.ChainID {
				v.Operators = append(v.Operators, op)
				if subs := udfs.Of(op.ID); subs != nil {
					v.UDFs = append(v.UDFs, UDFOperator{Op: op, Subtasks: subs})
				}
			}
		}
		vs = append(vs, v)
	}
	return vs
}

// TaskError is the failure of one operator subtask.
type TaskError = task.TaskError

// TriggerSavepoint takes a savepoint into dir (or the configured savepoint
// directory when dir is "") and returns its path; the job keeps running.
// It blocks until the savepoint completed or failed, or ctx ends.
func (j *Job) TriggerSavepoint(ctx context.Context, dir string) (string, error) {
	return j.savepoint(ctx, dir, false)
}

// TriggerCheckpoint takes a checkpoint now (as a periodic one, into the
// checkpoint storage) and returns its chk-<n> directory once it completed.
func (j *Job) TriggerCheckpoint(ctx context.Context) (string, error) {
	return j.request(ctx, &checkpoint.Request{Checkpoint: true})
}

// StopWithSavepoint takes a savepoint, lets every sink commit up to it,
// and stops the job, which then ends FINISHED (as Flink's stop with
// savepoint). It returns the savepoint's path once the savepoint
// completed; Wait for the job's end.
func (j *Job) StopWithSavepoint(ctx context.Context, dir string) (string, error) {
	return j.savepoint(ctx, dir, true)
}

func (j *Job) savepoint(ctx context.Context, dir string, stop bool) (string, error) {
	return j.request(ctx, &checkpoint.Request{Dir: dir, Stop: stop})
}

func (j *Job) request(ctx context.Context, r *checkpoint.Request) (string, error) {
	r.Answer = make(chan checkpoint.Answer, 1)
	select {
	case j.requests <- r:
	case <-j.done:
		return "", errors.New("job: no snapshot: the job has ended")
	case <-ctx.Done():
		return "", context.Cause(ctx)
	}
	select {
	case a := <-r.Answer:
		return a.Path, a.Err
	case <-ctx.Done():
		return "", context.Cause(ctx)
	}
}

// operatorOptions are the settings of the job's operators.
func (j *Job) operatorOptions() operators.Options {
	o := j.opts
	return operators.Options{
		Runner: o.Runner, NewRunner: o.NewRunner, BundleSize: o.BundleSize, BundleTime: o.BundleTime,
		Connectors: o.Connectors, SourceBatchRows: o.SourceBatchRows, Stdout: o.Stdout, Collect: o.Collect,
		CollectBatchBytes: o.CollectBatchBytes, Paths: o.Paths,
		KeyedCacheGroups: o.KeyedCacheGroups, UpdateInterval: j.config.UpdateInterval, StateTTL: j.config.StateTTL,
		WatermarkInterval: j.config.WatermarkInterval,
	}
}
