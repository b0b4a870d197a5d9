package job

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/flinkgo/flinkgo/runtime/checkpoint"
	"github.com/flinkgo/flinkgo/runtime/config"
	"github.com/flinkgo/flinkgo/runtime/metrics"
	"github.com/flinkgo/flinkgo/runtime/plan"
)

// Why a rescale happened (RescaleInfo.TriggerCause), with the names of
// Flink's rescale history (FLIP-495).
const (
	// CauseUpdateRequirement: a caller set new parallelism (Job.Rescale,
	// FLIP-291's resource requirements).
	CauseUpdateRequirement = "UPDATE_REQUIREMENT"
)

// How a rescale ended (RescaleInfo.Status), as Flink's rescale history.
const (
	RescalePending   = "PENDING"   // asked for, waiting for a checkpoint (and the cooldown)
	RescaleCompleted = "COMPLETED" // the job runs at the new parallelism
	RescaleFailed    = "FAILED"    // the job could not start at the new parallelism; it went on at the old one
	RescaleIgnored   = "IGNORED"   // a later request replaced it, or the job ended first
)

// Why a rescale ended (RescaleInfo.TerminatedReason), with the names of
// Flink's rescale history (FLIP-495's TerminatedReason).
const (
	ReasonSucceeded           = "SUCCEEDED"                     // COMPLETED
	ReasonExceptionOccurred   = "EXCEPTION_OCCURRED"            // FAILED
	ReasonRequirementsUpdated = "RESOURCE_REQUIREMENTS_UPDATED" // IGNORED: a later request replaced it
	ReasonNoParallelismChange = "NO_RESOURCES_OR_PARALLELISMS_CHANGE"
	ReasonJobFinished         = "JOB_FINISHED"  // IGNORED: the job ended before the rescale started
	ReasonJobCanceling        = "JOB_CANCELING" // IGNORED: the job was canceled while it restarted for it
)

// What started a pending rescale (RescaleInfo.Trigger), as FLIP-461.
const (
	// TriggerCompletedCheckpoint: the next completed checkpoint after the
	// request (and after the cooldown); nothing is reprocessed.
	TriggerCompletedCheckpoint = "COMPLETED_CHECKPOINT"
	// TriggerCheckpointFailures: max-checkpoint-failures checkpoints
	// failed in a row; the job restarts from its latest completed one.
	TriggerCheckpointFailures = "CHECKPOINT_FAILURES"
	// TriggerInPlace: stateless UDF operators' worker pools were resized
	// while the job ran (flinkgo's own): no restart, no checkpoint.
	TriggerInPlace = "IN_PLACE"
)

// How a rescale changes the job (RescaleInfo.Mode).
const (
	// ModeCheckpoint restarts the job at the new parallelism from a
	// checkpoint (FLIP-461).
	ModeCheckpoint = "CHECKPOINT"
	// ModeInPlace resizes the worker pools of stateless UDF operators
	// without restarting the job: their subtasks stay, their workers
	// change (RescaleVertex.WorkersBefore/After).
	ModeInPlace = "IN_PLACE"
)

// RescaleInfo is one rescale of a job: an entry of its rescale history
// (Flink 2.3's /jobs/:jid/rescales).
type RescaleInfo struct {
	// ID names the rescale (32 hex digits).
	ID           string
	TriggerCause string
	// Trigger is what started it (TriggerCompletedCheckpoint,
	// TriggerCheckpointFailures), "" while pending.
	Trigger string
	Status  string
	// TerminatedReason is Flink's code for why it ended (ReasonSucceeded,
	// ...), "" while pending; Reason says it in words.
	TerminatedReason string
	Reason           string
	// CheckpointID is the checkpoint the job restarted from at the new
	// parallelism (0: none, it started over).
	CheckpointID int64
	// Mode is ModeInPlace or ModeCheckpoint; ModeNote says why an
	// operator that could have been resized in place went through a
	// checkpoint ("" otherwise).
	Mode, ModeNote string
	// Vertices are every operator's parallelism before and after.
	Vertices []RescaleVertex
	// RequestedAt: when it was asked for; StartedAt: when the job began to
	// restart for it; EndedAt: when it ran at the new parallelism again
	// (or the rescale failed or was ignored).
	RequestedAt, StartedAt, EndedAt time.Time
}

// Duration is the time from the start of the restart to running at the
// new parallelism (0 until it ended); for an in-place rescale, from the
// request until every resized pool runs its new workers.
func (r RescaleInfo) Duration() time.Duration {
	if r.StartedAt.IsZero() || r.EndedAt.IsZero() {
		return 0
	}
	return r.EndedAt.Sub(r.StartedAt)
}

// RescaleVertex is one operator's parallelism before and after a rescale,
// and for a UDF operator its workers (0 for other kinds).
type RescaleVertex struct {
	UID, Name                   string
	Before, After               int
	WorkersBefore, WorkersAfter int
}

// pendingRescale is a requested rescale waiting for its trigger.
type pendingRescale struct {
	info  RescaleInfo
	graph *plan.Graph
	// failures counts the checkpoints that failed in a row since the
	// request.
	failures int
}

// ErrRescaleRefused wraps every reason Rescale refuses a request.
var ErrRescaleRefused = errors.New("rescale refused")

// errRescaling is the cause with which an attempt stops for a rescale.
var errRescaling = errors.New("job: stopping to rescale")

// Rescale asks the running job to change the parallelism of operators, by
// uid (an operator's, or a node's for every operator of the node), as
// Flink's adaptive scheduler applies new resource requirements (FLIP-291):
// the job restarts at the new parallelism from the next completed
// checkpoint (FLIP-461), so nothing is reprocessed, or after
// max-checkpoint-failures failed checkpoints from the latest completed
// one, and never within the cooldown after it started or last rescaled.
// Keyed state moves by key group as in a restore at another parallelism.
//
// It returns at once with the pending rescale; Rescales follows it. A
// request made while another is pending replaces it (which is IGNORED),
// and parallelism it does not name keeps the value of earlier requests. A
// request that changes nothing returns the current state with no rescale.
// Refused (ErrRescaleRefused): a job without periodic checkpoints, a job
// that has ended, an unknown uid (the error names the known ones), a
// parallelism above the job's max parallelism or otherwise out of bounds.
//
// Stateless UDF operators go further (docs/semantics.md#rescaling): a uid
// naming only UDF or map_batches operators (with the selects and filters
// of their node), asked for at least their number of subtasks, has its
// worker pools resized in place, without a checkpoint or a restart: the
// vertex keeps its subtasks and runs that many workers in all, spread
// over them (a ModeInPlace rescale, completed once the new workers run).
// Fewer workers than subtasks go through a checkpoint (ModeNote says so).
// When a request holds both kinds, the in-place part is applied and
// recorded on its own, and the returned rescale is the checkpoint one.
func (j *Job) Rescale(parallelism map[string]int) (RescaleInfo, error) {
	return j.rescale(parallelism, true)
}

// RescaleThroughCheckpoint is Rescale with every operator going through
// a checkpoint, stateless UDF ones too (a REST vertex that chains them
// with other operators rescales as a whole). An empty request does
// nothing.
func (j *Job) RescaleThroughCheckpoint(parallelism map[string]int) (RescaleInfo, error) {
	if len(parallelism) == 0 {
		return RescaleInfo{}, nil
	}
	return j.rescale(parallelism, false)
}

// rescale is Rescale; inPlace false sends every operator through a
// checkpoint (the autoscaler's model counts subtasks, not workers).
func (j *Job) rescale(parallelism map[string]int, inPlace bool) (RescaleInfo, error) {
	if j.State().Terminal() {
		return RescaleInfo{}, fmt.Errorf("%w: job %s has ended (%s)", ErrRescaleRefused, j.id, j.State())
	}
	place, rest, notes := parallelism, map[string]int(nil), []string(nil)
	if inPlace && len(parallelism) > 0 {
		place, rest, notes = j.splitInPlace(parallelism)
	} else {
		place, rest = nil, parallelism
	}
	var info RescaleInfo
	if len(rest) > 0 || len(place) == 0 {
		var err error
		if info, err = j.rescaleFromCheckpoint(rest, strings.Join(notes, "; ")); err != nil {
			return info, err
		}
	}
	if len(place) > 0 {
		in, err := j.resizeInPlace(place)
		if err != nil || len(rest) == 0 {
			return in, err
		}
	}
	return info, nil
}

// rescaleFromCheckpoint is the checkpoint path of Rescale (FLIP-461).
func (j *Job) rescaleFromCheckpoint(parallelism map[string]int, note string) (RescaleInfo, error) {
	if j.opts.Replan == nil {
		return RescaleInfo{}, fmt.Errorf("%w: job %s was started from a graph without its plan (Options.Replan unset)", ErrRescaleRefused, j.id)
	}
	if j.config.Checkpoint.Interval <= 0 {
		return RescaleInfo{}, fmt.Errorf("%w: job %s does not checkpoint (%s is unset): an in-place rescale restarts the job from its next completed checkpoint; "+
			"enable checkpointing, or stop the job with a savepoint and start it again from it at the new parallelism",
			ErrRescaleRefused, j.id, config.ConfigCheckpointInterval)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	current := j.mu.graph
	for _, uid := range slices.Sorted(maps.Keys(parallelism)) {
		if p := parallelism[uid]; p > current.MaxParallelism {
			return RescaleInfo{}, fmt.Errorf("%w: uid %q: parallelism %d is above the job's max parallelism %d (its number of key groups, "+
				"fixed once state has been saved): ask for at most %d", ErrRescaleRefused, uid, p, current.MaxParallelism, current.MaxParallelism)
		}
	}
	want := maps.Clone(j.mu.requirements)
	if want == nil {
		want = map[string]int{}
	}
	maps.Copy(want, parallelism)
	g, err := j.opts.Replan(want)
	if err != nil {
		return RescaleInfo{}, fmt.Errorf("%w: %w", ErrRescaleRefused, err)
	}
	if len(g.Operators) != len(current.Operators) || g.MaxParallelism != current.MaxParallelism {
		return RescaleInfo{}, fmt.Errorf("%w: job %s: planning at the new parallelism gave %d operators and max parallelism %d, the job has %d and %d "+
			"(a bug: a rescale changes parallelism only)", ErrRescaleRefused, j.id, len(g.Operators), g.MaxParallelism, len(current.Operators), current.MaxParallelism)
	}
	info := RescaleInfo{ID: NewJobID(), TriggerCause: CauseUpdateRequirement, Status: RescalePending, RequestedAt: time.Now(),
		Mode: ModeCheckpoint, ModeNote: note}
	changed := false
	for i, op := range current.Operators {
		after := g.Operators[i].Parallelism
		v := RescaleVertex{UID: op.UID, Name: op.Name, Before: op.Parallelism, After: after}
		if HasWorkers(op) {
			// An operator whose parallelism stays keeps its workers (an
			// earlier in-place resize's among them: the restart starts them
			// again); a new parallelism runs one worker per subtask.
			v.WorkersBefore, v.WorkersAfter = j.workers.Workers(op.UID, op.Parallelism), after
			if after == op.Parallelism {
				v.WorkersAfter = v.WorkersBefore
			}
		}
		info.Vertices = append(info.Vertices, v)
		changed = changed || after != op.Parallelism
	}
	if prev := j.mu.pending; prev != nil {
		j.endRescaleLocked(prev.info, RescaleIgnored, ReasonRequirementsUpdated, "replaced by rescale "+info.ID)
		j.mu.pending = nil
	}
	j.mu.requirements = want
	if !changed {
		return RescaleInfo{ID: info.ID, TriggerCause: info.TriggerCause, Status: RescaleIgnored,
			TerminatedReason: ReasonNoParallelismChange, Reason: "the job runs at this parallelism already",
			Vertices: info.Vertices, RequestedAt: info.RequestedAt, EndedAt: info.RequestedAt}, nil
	}
	j.mu.pending = &pendingRescale{info: info, graph: g}
	j.opts.Logger.Info("rescale requested", "rescale", info.ID, "parallelism", parallelism,
		"cooldown_until", j.mu.executingSince.Add(j.config.Rescale.Cooldown))
	return info, nil
}

// Rescales returns the job's rescale history, oldest first, and the
// pending rescale last. Safe at any time.
func (j *Job) Rescales() []RescaleInfo {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := append([]RescaleInfo(nil), j.mu.rescales...)
	for _, r := range j.mu.inPlace {
		out = append(out, *r)
	}
	if p := j.mu.pending; p != nil {
		out = append(out, p.info)
	}
	return out
}

// Parallelism returns every operator's current parallelism, by uid.
func (j *Job) Parallelism() map[string]int {
	g := j.graph()
	out := make(map[string]int, len(g.Operators))
	for _, op := range g.Operators {
		out[op.UID] = op.Parallelism
	}
	return out
}

// CurrentGraph returns the graph the job runs now: the one it started
// with until a rescale replaces it (a REST handler lists its vertices and
// their parallelism from it). Read-only; safe at any time.
func (j *Job) CurrentGraph() *plan.Graph { return j.graph() }

// graph is the graph the job runs now (a rescale replaces it).
func (j *Job) graph() *plan.Graph {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.mu.graph
}

// endRescaleLocked records a rescale that ended. j.mu is held.
func (j *Job) endRescaleLocked(info RescaleInfo, status, code, reason string) {
	info.Status, info.TerminatedReason, info.Reason = status, code, reason
	info.EndedAt = time.Now()
	j.mu.rescales = append(j.mu.rescales, info)
	log := j.opts.Logger.Info
	if status == RescaleFailed {
		log = j.opts.Logger.Warn
	}
	log("rescale "+status, "rescale", info.ID, "reason", reason, "from_request", info.EndedAt.Sub(info.RequestedAt).Round(time.Millisecond),
		"restart", info.Duration().Round(time.Millisecond))
}

// rescalePending reports whether a rescale waits for a checkpoint: the
// coordinator then takes aligned checkpoints (no channel state), which a
// rescale can restart from.
func (j *Job) rescalePending() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.mu.pending != nil
}

// onCheckpointForRescale starts a pending rescale when s triggers it: a
// completed checkpoint once the cooldown has passed, or the
// max-checkpoint-failures-th failed one in a row. Called by the
// coordinator of attempt a after it recorded s.
func (j *Job) onCheckpointForRescale(a *attempt, s checkpoint.Stats) {
	if s.Savepoint {
		return
	}
	j.mu.Lock()
	p := j.mu.pending
	if p == nil {
		j.mu.Unlock()
		return
	}
	trigger := ""
	switch s.Status {
	case "completed":
		p.failures = 0
		if s.PersistedData > 0 {
			// Channel state cannot be rescaled: the next checkpoint,
			// aligned while a rescale is pending (rescalePending), will.
			j.mu.Unlock()
			return
		}
		trigger = TriggerCompletedCheckpoint
	case "failed":
		p.failures++
		// As Flink, never from empty state: without a completed
		// checkpoint (or a snapshot the job started from) it waits.
		if p.failures >= j.config.Rescale.MaxCheckpointFailures && j.latestRestorePoint() != nil {
			trigger = TriggerCheckpointFailures
		}
	}
	if trigger == "" || time.Since(j.mu.executingSince) < j.config.Rescale.Cooldown {
		j.mu.Unlock()
		return
	}
	j.mu.pending = nil
	p.info.Trigger, p.info.StartedAt = trigger, time.Now()
	j.mu.Unlock()
	if !a.stopForRescale(p) {
		// The attempt is failing or stopping: the rescale waits for the
		// next attempt's checkpoints.
		j.mu.Lock()
		if j.mu.pending == nil {
			p.info.Trigger, p.info.StartedAt = "", time.Time{}
			j.mu.pending = p
		}
		j.mu.Unlock()
		return
	}
	j.opts.Logger.Info("rescaling", "rescale", p.info.ID, "trigger", trigger, "checkpoint", s.ID)
}

// stopForRescale stops the attempt so that the job restarts at p's
// parallelism, unless it is failing or stopping already. The job moves
// to RESTARTING, as Flink's adaptive scheduler does to rescale.
func (a *attempt) stopForRescale(p *pendingRescale) bool {
	ok := false
	a.failed.Do(func() {
		if a.ctx.Err() != nil || !a.job.lifecycle.move(Restarting, Running) {
			return
		}
		// failure: the attempt never ends as finished, even when its
		// tasks return nil on the cancel.
		a.rescale, a.failure, ok = p, errRescaling, true
		a.cancel(errRescaling)
	})
	return ok
}

// rescaleAttempt starts the attempt after one stopped for rescale p: the
// new graph, restored from the latest completed checkpoint. When the job
// cannot start at the new parallelism, the rescale fails and the job
// restarts at the old one, as after a failure.
func (j *Job) rescaleAttempt(ctx context.Context, p *pendingRescale) (*attempt, error) {
	j.store.Sweep() // no task runs: uploads of unfinished checkpoints go
	from := j.latestRestorePoint()
	j.mu.Lock()
	old, oldMetrics, oldUDFs := j.mu.graph, j.mu.taskMetrics, j.mu.udfMetrics
	j.mu.graph, j.mu.taskMetrics, j.mu.udfMetrics = p.graph, newTaskMetrics(p.graph), metrics.NewUDFs()
	j.mu.Unlock()
	for _, v := range p.info.Vertices {
		if v.Before != v.After {
			j.workers.Forget(v.UID) // a new parallelism: one worker per subtask again
		}
	}
	if from != nil {
		p.info.CheckpointID = from.Meta.CheckpointID
	}
	a, err := j.newAttempt(ctx, from)
	if err != nil {
		j.mu.Lock()
		j.mu.graph, j.mu.taskMetrics, j.mu.udfMetrics = old, oldMetrics, oldUDFs
		j.endRescaleLocked(p.info, RescaleFailed, ReasonExceptionOccurred, err.Error())
		j.mu.Unlock()
		return j.restart(ctx, fmt.Errorf("job: rescale %s failed: %w", p.info.ID, err))
	}
	if !j.lifecycle.move(Running, Restarting) { // canceled meanwhile
		a.release()
		j.mu.Lock()
		j.endRescaleLocked(p.info, RescaleIgnored, ReasonJobCanceling, "the job was canceled")
		j.mu.Unlock()
		return nil, context.Cause(ctx)
	}
	a.start()
	j.mu.Lock()
	j.endRescaleLocked(p.info, RescaleCompleted, ReasonSucceeded, "")
	j.mu.Unlock()
	return a, nil
}

// endPendingRescale drops the pending rescales of a job that ended.
func (j *Job) endPendingRescale() {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, info := range slices.Clone(j.mu.inPlace) {
		j.endInPlaceLocked(info, RescaleIgnored, ReasonJobFinished, "the job ended before its new workers ran")
	}
	if p := j.mu.pending; p != nil {
		j.endRescaleLocked(p.info, RescaleIgnored, ReasonJobFinished, "the job ended first")
		j.mu.pending = nil
	}
}

// HasWorkers reports whether op runs Python workers in a resizable pool
// and keeps no state: a UDF or map_batches operator.
func HasWorkers(op *plan.Operator) bool {
	return op.Kind == plan.KindUDF || op.Kind == plan.KindMapBatches
}

// ResizableInPlace reports whether an in-place rescale can serve ops: all
// stateless (UDF and map_batches operators, selects, filters), some with
// Python workers.
func ResizableInPlace(ops []*plan.Operator) bool {
	workers := false
	for _, op := range ops {
		if !statelessKinds[op.Kind] {
			return false
		}
		workers = workers || HasWorkers(op)
	}
	return workers
}

// statelessKinds are the kinds an in-place rescale may name: the UDF
// operators and what the planner splits their nodes into.
var statelessKinds = map[plan.Kind]bool{plan.KindUDF: true, plan.KindMapBatches: true, plan.KindSelect: true, plan.KindFilter: true}

// matchUID returns the operators uid names: the operator with that uid,
// or every operator of the node with that uid (plan.Operator.Role).
func matchUID(g *plan.Graph, uid string) []*plan.Operator {
	var out []*plan.Operator
	for _, op := range g.Operators {
		if op.UID == uid || strings.HasPrefix(op.UID, uid+"/") {
			out = append(out, op)
		}
	}
	return out
}

// splitInPlace sorts a rescale request: the uids whose operators can be
// resized in place (stateless, with workers, asked for at least their
// subtasks), and the rest, with a note for each stateless UDF uid that
// goes through a checkpoint all the same.
func (j *Job) splitInPlace(parallelism map[string]int) (place, rest map[string]int, notes []string) {
	g := j.graph()
	place, rest = map[string]int{}, map[string]int{}
	for _, uid := range slices.Sorted(maps.Keys(parallelism)) {
		n := parallelism[uid]
		ops := matchUID(g, uid)
		if !ResizableInPlace(ops) {
			rest[uid] = n
			continue
		}
		fits := true
		for _, op := range ops {
			if HasWorkers(op) && n < op.Parallelism {
				fits = false
				notes = append(notes, fmt.Sprintf("uid %q: %d workers are fewer than its %d subtasks (each runs at least one): "+
					"its parallelism changes through a checkpoint", uid, n, op.Parallelism))
			}
		}
		if fits {
			place[uid] = n
		} else {
			rest[uid] = n
		}
	}
	return place, rest, notes
}

// resizeInPlace resizes the worker pools of the stateless UDF operators
// uids name to n workers each in all, records the rescale (ModeInPlace)
// and completes it in the background once every resized pool runs its
// new workers.
func (j *Job) resizeInPlace(workers map[string]int) (RescaleInfo, error) {
	g := j.graph()
	now := time.Now()
	info := RescaleInfo{ID: NewJobID(), TriggerCause: CauseUpdateRequirement, Trigger: TriggerInPlace, Status: RescalePending,
		Mode: ModeInPlace, RequestedAt: now, StartedAt: now}
	target := map[string]int{} // by operator uid
	for uid, n := range workers {
		for _, op := range matchUID(g, uid) {
			if HasWorkers(op) {
				target[op.UID] = n
			}
		}
	}
	changed := false
	for _, op := range g.Operators {
		v := RescaleVertex{UID: op.UID, Name: op.Name, Before: op.Parallelism, After: op.Parallelism}
		if HasWorkers(op) {
			v.WorkersBefore = j.workers.Workers(op.UID, op.Parallelism)
			v.WorkersAfter = v.WorkersBefore
			if n, ok := target[op.UID]; ok {
				v.WorkersAfter = n
			}
			changed = changed || v.WorkersAfter != v.WorkersBefore
		}
		info.Vertices = append(info.Vertices, v)
	}
	if !changed {
		return RescaleInfo{ID: info.ID, TriggerCause: info.TriggerCause, Trigger: TriggerInPlace, Mode: ModeInPlace, Status: RescaleIgnored,
			TerminatedReason: ReasonNoParallelismChange, Reason: "the operators run this many workers already",
			Vertices: info.Vertices, RequestedAt: now, EndedAt: now}, nil
	}
	for _, op := range g.Operators {
		if n, ok := target[op.UID]; ok {
			if err := j.workers.Resize(op.UID, op.Parallelism, n); err != nil {
				j.mu.Lock()
				j.endRescaleLocked(info, RescaleFailed, ReasonExceptionOccurred, err.Error())
				j.mu.Unlock()
				return info, fmt.Errorf("job %s: in-place rescale %s: %w", j.id, info.ID, err)
			}
		}
	}
	pending := info
	j.mu.Lock()
	j.mu.inPlace = append(j.mu.inPlace, &pending)
	j.mu.Unlock()
	j.opts.Logger.Info("rescaling in place", "rescale", info.ID, "workers", workers)
	go j.completeInPlace(&pending, target)
	return info, nil
}

// completeInPlace ends in-place rescale info once the pools of every
// operator in target run their new workers in full: each grown worker has
// taken a batch, each retired one finished its bundle and exited; or as
// ignored when the job ends first.
func (j *Job) completeInPlace(info *RescaleInfo, target map[string]int) {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		done := true
		for uid, n := range target {
			done = done && j.workers.Settled(uid, n)
		}
		j.mu.Lock()
		switch {
		case !info.EndedAt.IsZero(): // the job ended: endPendingRescale
		case done:
			j.endInPlaceLocked(info, RescaleCompleted, ReasonSucceeded, "")
		case j.State().Terminal():
			j.endInPlaceLocked(info, RescaleIgnored, ReasonJobFinished, "the job ended first")
		}
		ended := !info.EndedAt.IsZero()
		j.mu.Unlock()
		if ended {
			return
		}
		select {
		case <-tick.C:
		case <-j.done:
		}
	}
}

// endInPlaceLocked moves in-place rescale info from the pending ones to
// the history. j.mu is held.
func (j *Job) endInPlaceLocked(info *RescaleInfo, status, code, reason string) {
	j.mu.inPlace = slices.DeleteFunc(j.mu.inPlace, func(r *RescaleInfo) bool { return r == info })
	j.endRescaleLocked(*info, status, code, reason)
	info.EndedAt = time.Now()
}

// Workers returns how many Python workers operator uid runs in all (over
// its subtasks' pools), 0 for an operator without workers or an unknown
// uid. Safe at any time.
func (j *Job) Workers(uid string) int {
	for _, op := range j.graph().Operators {
		if op.UID == uid && HasWorkers(op) {
			return j.workers.Workers(uid, op.Parallelism)
		}
	}
	return 0
}
