package rest

import (
	"net/http"

	"github.com/flinkgo/flinkgo/runtime/metrics"
	"github.com/flinkgo/flinkgo/runtime/server"
)

// metricsHistory answers GET /jobs/:jid/metrics-history (flinkgo's own
// path; Flink's web UI keeps no history, its charts start empty on each
// page load): each vertex's figures at the server's latest samplings,
// oldest first, a column per metric. Rates are summed over the subtasks
// (as /subtasks/metrics?agg=sum), busy, idle and back-pressured time at
// their max (agg=max), the input watermark at its min (null while a
// subtask has none) and watermarkLag is the sampling's time less it.
func (h *Handler) metricsHistory(w http.ResponseWriter, r *http.Request) {
	info, ok := h.lookup(w, r)
	if !ok {
		return
	}
	vertices := []map[string]any{}
	if info.Job != nil && info.History != nil {
		for _, v := range info.Job.Vertices() {
			id := VertexID(v.Head.UID)
			vertices = append(vertices, historyColumns(id, vertexName(v), info.History.Points(id)))
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"periodMillis": server.HistoryPeriod.Milliseconds(), "capacity": server.HistoryPoints,
		"vertices": vertices,
	})
}

// historyColumns lays a vertex's points out as one array per metric.
func historyColumns(id, name string, points []metrics.VertexPoint) map[string]any {
	n := len(points)
	at := make([]int64, n)
	in, out := make([]float64, n), make([]float64, n)
	busy, idle, bp := make([]float64, n), make([]float64, n), make([]float64, n)
	wm, lag := make([]*int64, n), make([]*int64, n)
	for i, p := range points {
		at[i] = p.At.UnixMilli()
		in[i], out[i] = p.RecordsInPerSecond, p.RecordsOutPerSecond
		busy[i], idle[i], bp[i] = p.BusyTimeMsPerSecond, p.IdleTimeMsPerSecond, p.BackPressuredTimeMsPerSecond
		if p.InputWatermark != metrics.NoWatermark {
			w, l := p.InputWatermark, at[i]-p.InputWatermark
			wm[i], lag[i] = &w, &l
		}
	}
	return map[string]any{
		"id": id, "name": name, "timestamps": at,
		"numRecordsInPerSecond": in, "numRecordsOutPerSecond": out,
		"busyTimeMsPerSecond": busy, "idleTimeMsPerSecond": idle, "backPressuredTimeMsPerSecond": bp,
		"currentInputWatermark": wm, "watermarkLag": lag,
	}
}
