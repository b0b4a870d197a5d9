package rest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/flinkgo/flinkgo/runtime/config"
	"github.com/flinkgo/flinkgo/runtime/job"
	"github.com/flinkgo/flinkgo/runtime/proto/jobpb"
	"github.com/flinkgo/flinkgo/runtime/server"
)

// trigger is one asynchronous savepoint, checkpoint or stop.
type trigger struct {
	job  string
	kind string // "savepoint" or "checkpoint"
	done chan struct{}
	// Set before done is closed.
	path string
	id   int64
	err  error
}

// checkpointJSON is Flink's CheckpointStatistics of one snapshot.
func checkpointJSON(s job.CheckpointStats, subtasks int) map[string]any {
	status, class := "COMPLETED", ".CompletedCheckpointStatistics"
	if s.Status != "completed" {
		status, class = "FAILED", ".FailedCheckpointStatistics"
	}
	kind := "CHECKPOINT"
	switch {
	case s.Savepoint:
		kind = "SAVEPOINT"
	case s.Unaligned:
		kind = "UNALIGNED_CHECKPOINT" // Flink's RestAPICheckpointType
	}
	size := max(s.Size, 0) // 0: unknown (unread, or failed)
	acked := subtasks
	if s.Status != "completed" {
		acked = 0
	}
	m := map[string]any{
		"className": class, "id": s.ID, "status": status, "is_savepoint": s.Savepoint, "checkpoint_type": kind,
		"savepointFormat": nil, "trigger_timestamp": s.Started.UnixMilli(),
		"latest_ack_timestamp": s.Started.Add(s.Duration).UnixMilli(), "checkpointed_size": size, "state_size": size,
		"end_to_end_duration": s.Duration.Milliseconds(), "alignment_buffered": 0, "processed_data": 0,
		"persisted_data": s.PersistedData, "num_subtasks": subtasks, "num_acknowledged_subtasks": acked, "tasks": map[string]any{},
	}
	if s.Status == "completed" {
		m["external_path"], m["discarded"] = s.Path, false
	} else {
		m["failure_timestamp"] = s.Started.Add(s.Duration).UnixMilli()
		if s.Err != nil {
			m["failure_message"] = s.Err.Error()
		}
	}
	return m
}

// statsSummary is Flink's StatsSummaryDto of xs.
func statsSummary(xs []int64) map[string]any {
	if len(xs) == 0 {
		return map[string]any{"min": 0, "max": 0, "avg": 0, "p50": 0, "p90": 0, "p95": 0, "p99": 0, "p999": 0}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	var sum int64
	for _, x := range s {
		sum += x
	}
	q := func(p float64) int64 { return s[min(len(s)-1, int(p*float64(len(s))))] }
	return map[string]any{"min": s[0], "max": s[len(s)-1], "avg": sum / int64(len(s)),
		"p50": q(0.5), "p90": q(0.9), "p95": q(0.95), "p99": q(0.99), "p999": q(0.999)}
}

func (h *Handler) checkpoints(w http.ResponseWriter, r *http.Request) {
	info, ok := h.lookup(w, r)
	if !ok {
		return
	}
	var stats []job.CheckpointStats
	subtasks := 0
	if info.Job != nil {
		stats = info.Job.Checkpoints()
		subtasks = tasks(info)
	}
	var completed, failed int
	var sizes, durations, persisted []int64
	latest := map[string]any{"completed": nil, "savepoint": nil, "failed": nil, "restored": nil}
	history := []map[string]any{}
	for _, s := range stats {
		c := checkpointJSON(s, subtasks)
		switch {
		case s.Status == "completed" && s.Savepoint:
			completed++
			latest["savepoint"] = c
		case s.Status == "completed":
			completed++
			latest["completed"] = c
		default:
			failed++
			latest["failed"] = c
		}
		if s.Status == "completed" {
			sizes = append(sizes, c["state_size"].(int64))
			durations = append(durations, s.Duration.Milliseconds())
			persisted = append(persisted, s.PersistedData)
		}
		history = append([]map[string]any{c}, history...) // newest first
	}
	restored := 0
	if path := info.Config[config.ConfigRestorePath]; path != "" {
		restored = 1
		latest["restored"] = map[string]any{"id": 0, "restore_timestamp": info.Started.UnixMilli(), "is_savepoint": true, "external_path": path}
	}
	zero := statsSummary(nil)
	writeJSON(w, http.StatusOK, map[string]any{
		"counts": map[string]int{"restored": restored, "total": len(stats), "in_progress": 0, "completed": completed, "failed": failed},
		"summary": map[string]any{"checkpointed_size": statsSummary(sizes), "state_size": statsSummary(sizes),
			"end_to_end_duration": statsSummary(durations), "alignment_buffered": zero, "processed_data": zero, "persisted_data": statsSummary(persisted)},
		"latest": latest, "history": history,
	})
}

func (h *Handler) checkpointConfig(w http.ResponseWriter, r *http.Request) {
	info, ok := h.lookup(w, r)
	if !ok {
		return
	}
	cfg, err := config.Parse(info.Config)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	cp := cfg.Checkpoint
	if cp.Interval <= 0 {
		writeError(w, http.StatusNotFound, fmt.Sprintf("Checkpointing is not enabled for job %s (execution.checkpointing.interval is 0)", info.ID))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"mode": "exactly_once", "interval": cp.Interval.Milliseconds(), "timeout": cp.Timeout.Milliseconds(),
		"min_pause": 0, "max_concurrent": 1,
		"externalization": map[string]bool{"enabled": true, "delete_on_cancellation": !cp.RetainOnCancel},
		"state_backend":   "pebble", "checkpoint_storage": "filesystem", "unaligned_checkpoints": cp.Unaligned,
		"tolerable_failed_checkpoints": cp.TolerableFailures, "aligned_checkpoint_timeout": 0,
		"checkpoints_after_tasks_finish": true, "state_changelog_enabled": false,
		"changelog_periodic_materialization_interval": 0, "changelog_storage": "memory",
	})
}

// start runs an asynchronous operation on info's job and answers 202
// with its request id.
func (h *Handler) start(w http.ResponseWriter, info server.JobInfo, kind string, run func(*trigger)) {
	t := &trigger{job: info.ID, kind: kind, done: make(chan struct{})}
	id := job.NewJobID()
	h.mu.Lock()
	h.triggers[id] = t
	h.mu.Unlock()
	h.ops.Go(func() {
		defer close(t.done)
		run(t)
		if t.err != nil {
			h.log.Warn("REST "+kind+" failed", "job", info.ID, "request", id, "error", t.err)
		}
	})
	writeJSON(w, http.StatusAccepted, map[string]string{"request-id": id})
}

// savepointRequest is the body of POST /jobs/:jid/savepoints and /stop,
// both spellings Flink accepts.
type savepointRequest struct {
	TargetDirectory  string `json:"target-directory"`
	TargetDirectory2 string `json:"targetDirectory"`
	CancelJob        bool   `json:"cancel-job"`
	Drain            bool   `json:"drain"`
	FormatType       string `json:"formatType"`
}

// readBody decodes an optional JSON body, answering 400 for a bad one.
func readBody(w http.ResponseWriter, r *http.Request, v any) bool {
	err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(v)
	if err != nil && !errors.Is(err, io.EOF) {
		writeError(w, http.StatusBadRequest, "Request body is not valid JSON: "+err.Error())
		return false
	}
	return true
}

func (h *Handler) triggerSavepoint(w http.ResponseWriter, r *http.Request) {
	h.savepoint(w, r, false)
}

func (h *Handler) stop(w http.ResponseWriter, r *http.Request) {
	h.savepoint(w, r, true)
}

func (h *Handler) savepoint(w http.ResponseWriter, r *http.Request, stop bool) {
	var req savepointRequest
	if !readBody(w, r, &req) {
		return
	}
	if req.Drain {
		writeError(w, http.StatusBadRequest, "drain=true is not supported: a stop ends the job at the savepoint without draining its sources")
		return
	}
	info, ok := h.running(w, r)
	if !ok {
		return
	}
	dir := cmpOr(req.TargetDirectory, req.TargetDirectory2)
	stop = stop || req.CancelJob
	h.start(w, info, "savepoint", func(t *trigger) {
		resp, err := h.srv.TriggerSavepoint(h.ctx, &jobpb.SavepointRequest{JobId: info.ID, Directory: dir, Stop: stop})
		t.path, t.err = resp.GetPath(), err
	})
}

func (h *Handler) triggerCheckpoint(w http.ResponseWriter, r *http.Request) {
	info, ok := h.running(w, r)
	if !ok {
		return
	}
	h.start(w, info, "checkpoint", func(t *trigger) {
		t.path, t.err = info.Job.TriggerCheckpoint(h.ctx)
		for _, s := range info.Job.Checkpoints() {
			if s.Path == t.path && t.err == nil {
				t.id = s.ID
			}
		}
	})
}

// triggerStatus is Flink's AsynchronousOperationResult of a savepoint,
// stop or checkpoint request.
func (h *Handler) triggerStatus(w http.ResponseWriter, r *http.Request) {
	tid := r.PathValue("tid")
	h.mu.Lock()
	t, ok := h.triggers[tid]
	h.mu.Unlock()
	kind := "savepoint"
	if strings.Contains(r.URL.Path, "/checkpoints/") {
		kind = "checkpoint"
	}
	if !ok || t.job != r.PathValue("jid") || t.kind != kind {
		writeError(w, http.StatusNotFound, fmt.Sprintf("There is no %s operation with the request id %s for job %s", kind, tid, r.PathValue("jid")))
		return
	}
	select {
	case <-t.done:
	default:
		writeJSON(w, http.StatusOK, map[string]any{"status": map[string]string{"id": "IN_PROGRESS"}, "operation": nil})
		return
	}
	op := map[string]any{}
	switch {
	case t.err != nil:
		op["failure-cause"] = map[string]string{"class": "org.apache.flink.util.FlinkException", "stack-trace": t.err.Error(), "serialized-throwable": ""}
	case kind == "checkpoint":
		op["checkpointId"] = t.id
	default:
		op["location"] = t.path
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": map[string]string{"id": "COMPLETED"}, "operation": op})
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
