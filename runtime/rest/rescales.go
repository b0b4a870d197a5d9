package rest

import (
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/flinkgo/flinkgo/runtime/config"
	"github.com/flinkgo/flinkgo/runtime/job"
	"github.com/flinkgo/flinkgo/runtime/server"
)

// rescaleVertex is one job vertex's entry of a rescale, with the field
// names of Flink's JobRescaleDetails.VertexParallelismRescaleInfo.
type rescaleVertex struct {
	JobVertexID   string `json:"jobVertexId"`
	JobVertexName string `json:"jobVertexName"`
	// Flink's slot sharing group: flinkgo runs every task in one process,
	// so all vertices share "default".
	SlotSharingGroupID   string `json:"slotSharingGroupId"`
	SlotSharingGroupName string `json:"slotSharingGroupName"`
	// desired is the parallelism asked for, sufficient the least the
	// rescale accepts: flinkgo rescales to exactly the asked one.
	DesiredParallelism    int  `json:"desiredParallelism"`
	SufficientParallelism int  `json:"sufficientParallelism"`
	PreRescaleParallelism int  `json:"preRescaleParallelism"`
	PostRescale           *int `json:"postRescaleParallelism"` // null until the rescale completed
}

// rescaleDetails is one rescale, as Flink 2.3's JobRescaleDetails (the
// entries of /rescales/history and /rescales/overview's latest), with
// flinkgo's own figures after Flink's fields.
type rescaleDetails struct {
	RescaleUUID              string                   `json:"rescaleUuid"`
	ResourceRequirementsUUID string                   `json:"resourceRequirementsUuid"`
	RescaleAttemptID         int64                    `json:"rescaleAttemptId"`
	Vertices                 map[string]rescaleVertex `json:"vertices"`
	Slots                    map[string]any           `json:"slots"`
	SchedulerStates          []any                    `json:"schedulerStates"`
	StartTimestamp           int64                    `json:"startTimestampInMillis"`
	EndTimestamp             *int64                   `json:"endTimestampInMillis"` // null while in progress
	TerminalState            *string                  `json:"terminalState"`        // null while in progress
	TriggerCause             string                   `json:"triggerCause"`
	TerminatedReason         *string                  `json:"terminatedReason"`

	// flinkgo: from the request to its end (ms), the restart alone (from
	// stopping the old attempt to running the new one), what started it
	// (COMPLETED_CHECKPOINT, CHECKPOINT_FAILURES), the checkpoint it
	// restored, and why it failed or was ignored in words.
	DurationMs        int64  `json:"durationInMillis"`
	RestartDurationMs int64  `json:"restartDurationInMillis"`
	Trigger           string `json:"trigger,omitempty"`
	CheckpointID      int64  `json:"checkpointId"`
	Reason            string `json:"reason,omitempty"`
}

// newRescaleDetails describes r for the REST API. Its vertices are the
// job's current ones (a chain rescales as a whole: its head's parallelism
// is the vertex's).
func newRescaleDetails(j *job.Job, r job.RescaleInfo) rescaleDetails {
	byUID := map[string]job.RescaleVertex{}
	for _, v := range r.Vertices {
		byUID[v.UID] = v
	}
	d := rescaleDetails{
		RescaleUUID: r.ID, ResourceRequirementsUUID: r.ID, RescaleAttemptID: 1,
		Vertices: map[string]rescaleVertex{}, Slots: map[string]any{}, StartTimestamp: r.RequestedAt.UnixMilli(),
		TriggerCause: r.TriggerCause, Trigger: r.Trigger, CheckpointID: r.CheckpointID, Reason: r.Reason,
		RestartDurationMs: r.Duration().Milliseconds(),
	}
	for _, v := range j.Vertices() {
		rv, ok := byUID[v.Head.UID]
		if !ok {
			continue
		}
		e := rescaleVertex{
			JobVertexID: VertexID(v.Head.UID), JobVertexName: vertexName(v),
			SlotSharingGroupID: VertexID("default"), SlotSharingGroupName: "default",
			DesiredParallelism: rv.After, SufficientParallelism: rv.After, PreRescaleParallelism: rv.Before,
		}
		if r.Status == job.RescaleCompleted {
			e.PostRescale = &rv.After
		}
		d.Vertices[e.JobVertexID] = e
	}
	if !r.EndedAt.IsZero() {
		end := r.EndedAt.UnixMilli()
		state, reason := r.Status, r.TerminatedReason
		d.EndTimestamp, d.TerminalState, d.TerminatedReason = &end, &state, &reason
		d.DurationMs = end - d.StartTimestamp
	} else {
		d.DurationMs = time.Since(r.RequestedAt).Milliseconds()
	}
	return d
}

// rescalesCounts are Flink's JobRescalesOverview.RescalesCounts.
type rescalesCounts struct {
	Ignored    int `json:"ignored"`
	InProgress int `json:"inProgress"`
	Completed  int `json:"completed"`
	Failed     int `json:"failed"`
}

// latestRescales is the latest rescale of each terminal state, null for
// none.
type latestRescales struct {
	Completed *rescaleDetails `json:"completed"`
	Failed    *rescaleDetails `json:"failed"`
	Ignored   *rescaleDetails `json:"ignored"`
}

// rescalesOverview answers Flink 2.3's GET /jobs/:jid/rescales/overview:
// counts by state and the latest rescale of each terminal state.
func (h *Handler) rescalesOverview(w http.ResponseWriter, r *http.Request) {
	info, ok := h.rescalable(w, r)
	if !ok {
		return
	}
	var counts rescalesCounts
	var latest latestRescales
	for _, ri := range info.Job.Rescales() {
		d := newRescaleDetails(info.Job, ri)
		switch ri.Status {
		case job.RescalePending:
			counts.InProgress++
		case job.RescaleCompleted:
			counts.Completed++
			latest.Completed = &d
		case job.RescaleFailed:
			counts.Failed++
			latest.Failed = &d
		case job.RescaleIgnored:
			counts.Ignored++
			latest.Ignored = &d
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"rescalesCounts": counts, "latest": latest})
}

// rescalesHistory answers GET /jobs/:jid/rescales/history: every rescale,
// newest first as Flink lists it, the one in progress included.
func (h *Handler) rescalesHistory(w http.ResponseWriter, r *http.Request) {
	info, ok := h.rescalable(w, r)
	if !ok {
		return
	}
	all := info.Job.Rescales()
	out := make([]rescaleDetails, 0, len(all))
	for i := len(all) - 1; i >= 0; i-- {
		out = append(out, newRescaleDetails(info.Job, all[i]))
	}
	writeJSON(w, http.StatusOK, out)
}

// rescalesSummary answers Flink 2.3's GET /jobs/:jid/rescales/summary
// (JobRescalesSummary): counts by state and the duration statistics (from
// the request to its end, ms) of the rescales that ended, all of them and
// by terminal state. A state with none has all-zero statistics (Flink's
// percentiles are NaN then, which JSON cannot carry).
func (h *Handler) rescalesSummary(w http.ResponseWriter, r *http.Request) {
	info, ok := h.rescalable(w, r)
	if !ok {
		return
	}
	var counts rescalesCounts
	var all []int64
	byState := map[string][]int64{}
	for _, ri := range info.Job.Rescales() {
		switch ri.Status {
		case job.RescalePending:
			counts.InProgress++
			continue
		case job.RescaleCompleted:
			counts.Completed++
		case job.RescaleFailed:
			counts.Failed++
		case job.RescaleIgnored:
			counts.Ignored++
		}
		// As durationInMillis and Flink: the end's and the start's timestamps apart.
		d := ri.EndedAt.UnixMilli() - ri.RequestedAt.UnixMilli()
		all = append(all, d)
		byState[ri.Status] = append(byState[ri.Status], d)
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"rescalesCounts":                         counts,
		"rescalesDurationStatsInMillis":          statsSummary(all),
		"completedRescalesDurationStatsInMillis": statsSummary(byState[job.RescaleCompleted]),
		"ignoredRescalesDurationStatsInMillis":   statsSummary(byState[job.RescaleIgnored]),
		"failedRescalesDurationStatsInMillis":    statsSummary(byState[job.RescaleFailed]),
	})
}

// rescaleDetails answers Flink 2.3's GET
// /jobs/:jid/rescales/details/:rescaleuuid: one rescale of the history (the
// one in progress included), 400 for an id that is not 32 hex digits, 404
// for one the job does not have.
func (h *Handler) rescaleDetails(w http.ResponseWriter, r *http.Request) {
	info, ok := h.rescalable(w, r)
	if !ok {
		return
	}
	id := r.PathValue("rid")
	if b, err := hex.DecodeString(id); err != nil || len(b) != 16 {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("Bad rescale id %q: want the 32 hex digits of a rescaleUuid (see /jobs/%s/rescales/history)", id, info.ID))
		return
	}
	for _, ri := range info.Job.Rescales() {
		if strings.EqualFold(ri.ID, id) {
			writeJSON(w, http.StatusOK, newRescaleDetails(info.Job, ri))
			return
		}
	}
	writeError(w, http.StatusNotFound, fmt.Sprintf("Could not find rescale %s of job %s (its rescales are listed at /jobs/%s/rescales/history)", id, info.ID, info.ID))
}

// rescalesConfig answers Flink 2.3's GET /jobs/:jid/rescales/config
// (JobRescaleConfigInfo): the settings that decide when a requested
// rescale happens. flinkgo keeps every rescale (rescaleHistoryMax null),
// has no reactive mode (schedulerExecutionMode null), no slots to wait for
// (the resource timeouts 0) and no maximum delay (null: a rescale waits
// for the next completed checkpoint or rescaleOnFailedCheckpointCount
// failed ones).
func (h *Handler) rescalesConfig(w http.ResponseWriter, r *http.Request) {
	info, ok := h.lookup(w, r)
	if !ok {
		return
	}
	cfg, err := config.Parse(info.Config)
	if err != nil {
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("Job %s's configuration: %v", info.ID, err))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"rescaleHistoryMax":                              nil,
		"schedulerExecutionMode":                         nil,
		"submissionResourceWaitTimeoutInMillis":          0,
		"submissionResourceStabilizationTimeoutInMillis": 0,
		"slotIdleTimeoutInMillis":                        0,
		"executingCooldownTimeoutInMillis":               cfg.Rescale.Cooldown.Milliseconds(),
		"executingResourceStabilizationTimeoutInMillis":  0,
		"maximumDelayForTriggeringRescaleInMillis":       nil,
		"rescaleOnFailedCheckpointCount":                 cfg.Rescale.MaxCheckpointFailures,
	})
}

// rescalable returns the path's job when it started (a job that ended
// keeps its history), or answers why not.
func (h *Handler) rescalable(w http.ResponseWriter, r *http.Request) (server.JobInfo, bool) {
	info, ok := h.lookup(w, r)
	if ok && info.Job == nil {
		writeError(w, http.StatusNotFound, fmt.Sprintf("Job %s never started: it has no rescale history", info.ID))
		return info, false
	}
	return info, ok
}
