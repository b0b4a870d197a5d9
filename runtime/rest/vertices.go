package rest

import (
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/flinkgo/flinkgo/runtime/job"
	"github.com/flinkgo/flinkgo/runtime/metrics"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/runtime/server"
)

// taskMetrics are subtask i's task metrics, by Flink's names.
func taskMetrics(info server.JobInfo, v job.Vertex, i int) map[string]float64 {
	var rates metrics.Rates
	if info.Rates != nil && !info.State.Terminal() {
		rates = info.Rates.Rates(v.Tasks[i])
	}
	return v.Tasks[i].Read().Values(rates)
}

// udfMetricID is the id of a UDF operator's metric within its vertex,
// as Flink names operator metrics: "<operator name>.<metric>".
func udfMetricID(op *plan.Operator, name string) string { return op.Name + "." + name }

// metricIDs lists a vertex's metrics of one subtask: the task's, then
// each UDF operator's.
func metricIDs(v job.Vertex) []string {
	ids := slices.Clone(metrics.TaskMetricNames)
	for _, u := range v.UDFs {
		for _, n := range metrics.UDFMetricNames {
			ids = append(ids, udfMetricID(u.Op, n))
		}
	}
	return ids
}

// subtaskMetrics are subtask i's metrics by metricIDs.
func subtaskValues(info server.JobInfo, v job.Vertex, i int) map[string]float64 {
	m := taskMetrics(info, v, i)
	for _, u := range v.UDFs {
		if i >= len(u.Subtasks) {
			continue
		}
		for n, x := range u.Subtasks[i].Values() {
			m[udfMetricID(u.Op, n)] = x
		}
	}
	return m
}

// formatValue is how Flink's metric values read: integers without a point.
func formatValue(x float64) string {
	if x == math.Trunc(x) && math.Abs(x) < 1e18 {
		return strconv.FormatInt(int64(x), 10)
	}
	return strconv.FormatFloat(x, 'f', -1, 64)
}

func vertexDetails(info server.JobInfo, v job.Vertex) map[string]any {
	subtasks := []map[string]any{}
	state := taskState(info.State)
	for i := range v.Tasks {
		t := v.Tasks[i].Read()
		subtasks = append(subtasks, map[string]any{
			"subtask": i, "status": state, "attempt": max(0, info.Job.Attempts()-1), "endpoint": "localhost",
			"host": "localhost", "taskmanager-id": "local",
			"start-time": millis(info.Started), "end-time": millis(info.Ended), "duration": duration(info),
			"metrics": map[string]any{
				"read-bytes": t.BytesIn, "read-bytes-complete": info.State.Terminal(),
				"write-bytes": t.BytesOut, "write-bytes-complete": info.State.Terminal(),
				"read-records": t.RecordsIn, "read-records-complete": info.State.Terminal(),
				"write-records": t.RecordsOut, "write-records-complete": info.State.Terminal(),
				"accumulated-backpressured-time": t.BackPressured.Milliseconds(),
				"accumulated-idle-time":          t.Idle.Milliseconds(), "accumulated-busy-time": t.Busy.Milliseconds(),
			},
			"status-duration": map[string]int64{state: duration(info)},
		})
	}
	out := map[string]any{
		"id": VertexID(v.Head.UID), "name": vertexName(v), "parallelism": v.Head.Parallelism,
		"maxParallelism": info.Job.CurrentGraph().MaxParallelism, "now": time.Now().UnixMilli(), "subtasks": subtasks,
	}
	addWorkers(out, info.Job, v)
	return out
}

// backpressureLevel is Flink's: above 10% of the time back-pressured is
// low, above 50% high.
func backpressureLevel(ratio float64) string {
	switch {
	case ratio > 0.5:
		return "high"
	case ratio > 0.1:
		return "low"
	}
	return "ok"
}

func (h *Handler) backpressure(w http.ResponseWriter, r *http.Request) {
	info, v, ok := h.lookupVertex(w, r)
	if !ok {
		return
	}
	subtasks := []map[string]any{}
	worst := 0.0
	for i := range v.Tasks {
		m := taskMetrics(info, v, i)
		ratio := m["backPressuredTimeMsPerSecond"] / 1000
		worst = max(worst, ratio)
		subtasks = append(subtasks, map[string]any{
			"subtask": i, "attempt-number": max(0, info.Job.Attempts()-1), "backpressureLevel": backpressureLevel(ratio),
			"ratio": ratio, "idleRatio": m["idleTimeMsPerSecond"] / 1000, "busyRatio": m["busyTimeMsPerSecond"] / 1000,
		})
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"status": "ok", "backpressureLevel": backpressureLevel(worst), "end-timestamp": time.Now().UnixMilli(),
		"subtasks": subtasks,
	})
}

func (h *Handler) watermarks(w http.ResponseWriter, r *http.Request) {
	_, v, ok := h.lookupVertex(w, r)
	if !ok {
		return
	}
	out := []map[string]string{}
	for i, t := range v.Tasks {
		out = append(out, map[string]string{"id": fmt.Sprintf("%d.currentInputWatermark", i), "value": strconv.FormatInt(t.InputWatermark.Load(), 10)})
	}
	writeJSON(w, http.StatusOK, out)
}

// requested splits a ?get= list; it answers 400 for an unknown metric,
// naming the known ones.
func requested(w http.ResponseWriter, r *http.Request, ids []string, known func(string) bool) ([]string, bool) {
	get := r.URL.Query().Get("get")
	if get == "" {
		return nil, true
	}
	names := strings.Split(get, ",")
	for _, n := range names {
		if !known(n) {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("unknown metric %q; known: %s", n, strings.Join(ids, ", ")))
			return nil, false
		}
	}
	return names, true
}

// vertexMetrics is Flink's vertex metrics: "<subtask>.<metric>" ids, with
// their values when asked for by ?get=.
func (h *Handler) vertexMetrics(w http.ResponseWriter, r *http.Request) {
	info, v, ok := h.lookupVertex(w, r)
	if !ok {
		return
	}
	ids := metricIDs(v)
	names, ok := requested(w, r, ids, func(n string) bool {
		sub, name, found := strings.Cut(n, ".")
		i, err := strconv.Atoi(sub)
		return found && err == nil && i >= 0 && i < len(v.Tasks) && slices.Contains(ids, name)
	})
	if !ok {
		return
	}
	out := []map[string]string{}
	if names == nil {
		for i := range v.Tasks {
			for _, n := range ids {
				out = append(out, map[string]string{"id": fmt.Sprintf("%d.%s", i, n)})
			}
		}
		writeJSON(w, http.StatusOK, out)
		return
	}
	values := map[int]map[string]float64{}
	for _, n := range names {
		sub, name, _ := strings.Cut(n, ".")
		i, _ := strconv.Atoi(sub)
		if values[i] == nil {
			values[i] = subtaskValues(info, v, i)
		}
		out = append(out, map[string]string{"id": n, "value": formatValue(values[i][name])})
	}
	writeJSON(w, http.StatusOK, out)
}

// subtaskMetrics aggregates metrics over a vertex's subtasks (?agg=min,
// max, avg, sum, skew; all when unset), as Flink's autoscaler reads them.
func (h *Handler) subtaskMetrics(w http.ResponseWriter, r *http.Request) {
	info, v, ok := h.lookupVertex(w, r)
	if !ok {
		return
	}
	ids := metricIDs(v)
	names, ok := requested(w, r, ids, func(n string) bool { return slices.Contains(ids, n) })
	if !ok {
		return
	}
	if names == nil {
		out := []map[string]string{}
		for _, n := range ids {
			out = append(out, map[string]string{"id": n})
		}
		writeJSON(w, http.StatusOK, out)
		return
	}
	aggs := []string{"min", "max", "avg", "sum", "skew"}
	if a := r.URL.Query().Get("agg"); a != "" {
		aggs = strings.Split(a, ",")
		for _, a := range aggs {
			switch a {
			case "min", "max", "avg", "sum", "skew":
			default:
				writeError(w, http.StatusBadRequest, fmt.Sprintf("unknown aggregation %q: use min, max, avg, sum or skew", a))
				return
			}
		}
	}
	values := make([]map[string]float64, len(v.Tasks))
	for i := range v.Tasks {
		values[i] = subtaskValues(info, v, i)
	}
	out := []map[string]any{}
	for _, n := range names {
		lo, hi, sum := math.Inf(1), math.Inf(-1), 0.0
		for _, m := range values {
			lo, hi, sum = min(lo, m[n]), max(hi, m[n]), sum+m[n]
		}
		avg := sum / float64(len(values))
		all := map[string]float64{"min": lo, "max": hi, "avg": avg, "sum": sum, "skew": 0}
		if avg != 0 {
			// Flink's skew: how far the largest is above the average, in percent.
			all["skew"] = (hi - avg) / avg * 100
		}
		e := map[string]any{"id": n}
		for _, a := range aggs {
			e[a] = all[a]
		}
		out = append(out, e)
	}
	writeJSON(w, http.StatusOK, out)
}
