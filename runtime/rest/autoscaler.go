package rest

import (
	"net/http"

	"github.com/flinkgo/flinkgo/runtime/autoscaler"
)

// autoscaler answers GET /jobs/:jid/autoscaler (flinkgo's own path; Flink
// has none): the job's job.autoscaler.* settings, the vertices it scales
// with their bounds, and its decisions with their inputs, oldest first.
func (h *Handler) autoscaler(w http.ResponseWriter, r *http.Request) {
	info, ok := h.lookup(w, r)
	if !ok {
		return
	}
	if info.Job == nil {
		msg := "Job " + info.ID + " is still starting: ask again once it runs"
		if info.State.Terminal() {
			msg = "Job " + info.ID + " never started: it has no autoscaler"
		}
		writeError(w, http.StatusConflict, msg)
		return
	}
	cfg := info.Job.AutoscalerConfig()
	vertices := []map[string]any{}
	for _, v := range autoscaler.Vertices(info.Job.CurrentGraph(), nil) {
		if v.Bounds.Zero() {
			continue
		}
		vertices = append(vertices, map[string]any{
			"id": VertexID(v.UIDs[0]), "uid": v.UIDs[0], "parallelism": v.Parallelism,
			"min": v.Bounds.Min, "max": v.Bounds.Max,
		})
	}
	decisions := []map[string]any{}
	for _, d := range info.Job.AutoscalerDecisions() {
		decisions = append(decisions, map[string]any{
			"timestamp": d.At.UnixMilli(), "vertex": VertexID(d.UID), "uid": d.UID,
			"from": d.From, "to": d.To, "min": d.Min, "max": d.Max,
			"numRecordsInPerSecond": d.RecordsInPerSec, "busyRatio": d.BusyRatio,
			"trueProcessingRate": d.TrueRate, "targetDataRate": d.TargetRate,
			"pendingRecords": d.Backlog, "catchUpDataRate": d.CatchUpRate,
			"expectedUtilization": d.Utilization, "reason": d.Reason,
			"rescaleId": d.Rescale, "error": d.Err,
		})
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"enabled": cfg.Enabled,
		"config": map[string]any{
			"job.autoscaler.utilization.target":     cfg.Target,
			"job.autoscaler.utilization.boundary":   cfg.Boundary,
			"job.autoscaler.stabilization.interval": cfg.Stabilization.Milliseconds(),
			"job.autoscaler.metrics.window":         cfg.MetricsWindow.Milliseconds(),
			"job.autoscaler.scale-down.interval":    cfg.ScaleDownInterval.Milliseconds(),
		},
		"vertices":  vertices,
		"decisions": decisions,
	})
}
