package rest

import (
	"fmt"
	"net/http"
	"runtime"
	"strconv"
	"time"

	"github.com/flinkgo/flinkgo/runtime/config"
	"github.com/flinkgo/flinkgo/runtime/job"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/runtime/proto/jobpb"
	"github.com/flinkgo/flinkgo/runtime/server"
)

// flinkState is a job state as Flink spells it.
func flinkState(s job.JobState) string {
	if s == job.Canceling {
		return "CANCELLING"
	}
	return s.String()
}

// taskState is the state of every task of a job in state s (flinkgo runs
// all of a job's tasks together).
func taskState(s job.JobState) string {
	switch s {
	case job.Created, job.Restarting:
		return "SCHEDULED"
	case job.Canceling, job.Failing:
		return "CANCELING"
	}
	return flinkState(s)
}

func millis(t time.Time) int64 {
	if t.IsZero() {
		return -1
	}
	return t.UnixMilli()
}

// duration is Flink's: from start to end, or to now while running.
func duration(info server.JobInfo) int64 {
	end := info.Ended
	if end.IsZero() {
		end = time.Now()
	}
	return end.Sub(info.Started).Milliseconds()
}

// taskCounts are Flink's per-state counts of tasks, n tasks in state.
func taskCounts(state string, n int) map[string]int {
	c := map[string]int{}
	for _, s := range []string{"CREATED", "SCHEDULED", "DEPLOYING", "RUNNING", "FINISHED", "CANCELING", "CANCELED", "FAILED", "RECONCILING", "INITIALIZING"} {
		c[s] = 0
	}
	c[state] += n
	return c
}

func (h *Handler) config(w http.ResponseWriter, _ *http.Request) {
	name, offset := time.Now().Zone()
	writeJSON(w, http.StatusOK, map[string]any{
		"refresh-interval": 3000, "timezone-name": name, "timezone-offset": offset * 1000,
		"flink-version": flinkVersion, "flink-revision": "flinkgo",
		"features": map[string]bool{"web-submit": false, "web-cancel": true, "web-rescale": true, "web-history": false},
	})
}

func (h *Handler) overview(w http.ResponseWriter, _ *http.Request) {
	counts := map[job.JobState]int{}
	for _, j := range h.srv.Jobs() {
		counts[j.State]++
	}
	running := len(h.srv.Jobs()) - counts[job.Finished] - counts[job.Canceled] - counts[job.Failed]
	// One process runs every task: one task manager, its slots the CPUs.
	writeJSON(w, http.StatusOK, map[string]any{
		"taskmanagers": 1, "slots-total": runtime.NumCPU(), "slots-available": runtime.NumCPU(),
		"jobs-running": running, "jobs-finished": counts[job.Finished], "jobs-cancelled": counts[job.Canceled],
		"jobs-failed": counts[job.Failed], "flink-version": flinkVersion, "flink-commit": "flinkgo",
	})
}

func (h *Handler) jobs(w http.ResponseWriter, _ *http.Request) {
	jobs := []map[string]string{}
	for _, j := range h.srv.Jobs() {
		jobs = append(jobs, map[string]string{"id": j.ID, "status": flinkState(j.State)})
	}
	writeJSON(w, http.StatusOK, map[string]any{"jobs": jobs})
}

// tasks is how many tasks (chain subtasks) info's job has.
func tasks(info server.JobInfo) int {
	n := 0
	if info.Job != nil {
		for _, v := range info.Job.Vertices() {
			n += len(v.Tasks)
		}
	}
	return n
}

func (h *Handler) jobsOverview(w http.ResponseWriter, _ *http.Request) {
	jobs := []map[string]any{}
	for _, j := range h.srv.Jobs() {
		jobs = append(jobs, map[string]any{
			"jid": j.ID, "name": j.Name, "state": flinkState(j.State),
			"start-time": millis(j.Started), "end-time": millis(j.Ended), "duration": duration(j),
			"last-modification": lastModification(j), "tasks": taskCounts(taskState(j.State), tasks(j)),
		})
	}
	writeJSON(w, http.StatusOK, map[string]any{"jobs": jobs})
}

func lastModification(info server.JobInfo) int64 {
	if !info.Ended.IsZero() {
		return info.Ended.UnixMilli()
	}
	last := info.Started
	if info.Job != nil {
		if h := info.Job.History(); len(h) > 0 {
			last = h[len(h)-1].At
		}
	}
	return last.UnixMilli()
}

func (h *Handler) jobStatus(w http.ResponseWriter, r *http.Request) {
	info, ok := h.lookup(w, r)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": flinkState(info.State)})
}

func (h *Handler) jobDetails(w http.ResponseWriter, r *http.Request) {
	info, ok := h.lookup(w, r)
	if !ok {
		return
	}
	timestamps := map[string]int64{}
	for _, s := range []job.JobState{job.Created, job.Running, job.Failing, job.Canceling, job.Canceled, job.Failed, job.Finished, job.Restarting} {
		timestamps[flinkState(s)] = 0
	}
	timestamps["INITIALIZING"] = info.Started.UnixMilli()
	timestamps["SUSPENDED"], timestamps["RECONCILING"] = 0, 0
	vertices := []map[string]any{}
	maxParallelism := -1
	var p map[string]any
	if info.Job != nil {
		for _, c := range info.Job.History() {
			timestamps[flinkState(c.State)] = c.At.UnixMilli()
		}
		maxParallelism = info.Job.CurrentGraph().MaxParallelism
		state := taskState(info.State)
		for _, v := range info.Job.Vertices() {
			vertex := map[string]any{
				"id": VertexID(v.Head.UID), "name": vertexName(v), "maxParallelism": maxParallelism,
				"parallelism": v.Head.Parallelism, "status": state,
				"start-time": millis(info.Started), "end-time": millis(info.Ended), "duration": duration(info),
				"tasks": taskCounts(state, len(v.Tasks)), "metrics": ioMetrics(info, v),
			}
			addWorkers(vertex, info.Job, v)
			vertices = append(vertices, vertex)
		}
		p = planJSON(info)
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"jid": info.ID, "name": info.Name, "isStoppable": false, "state": flinkState(info.State),
		"job-type": "STREAMING", "start-time": millis(info.Started), "end-time": millis(info.Ended),
		"duration": duration(info), "maxParallelism": maxParallelism, "now": time.Now().UnixMilli(),
		"timestamps": timestamps, "vertices": vertices,
		"status-counts": taskCounts(taskState(info.State), len(vertices)), "plan": p,
	})
}

// vertexName is Flink's: the chain's operator names joined.
// addWorkers adds flinkgo's "flinkgo-workers" beside Flink's parallelism
// to a vertex that runs Python workers: how many its UDF operators run in
// all, which an in-place rescale changes while the parallelism stays.
func addWorkers(vertex map[string]any, j *job.Job, v job.Vertex) {
	if len(v.UDFs) == 0 {
		return
	}
	n := 0
	for _, u := range v.UDFs {
		n += j.Workers(u.Op.UID)
	}
	vertex["flinkgo-workers"] = n
}

func vertexName(v job.Vertex) string {
	name := ""
	for i, op := range v.Operators {
		if i > 0 {
			name += " -> "
		}
		name += op.Name
	}
	return name
}

// ioMetrics are a vertex's totals over its subtasks (Flink's
// IOMetricsInfo).
func ioMetrics(info server.JobInfo, v job.Vertex) map[string]any {
	var m [7]int64
	for _, t := range v.Tasks {
		r := t.Read()
		for i, x := range []int64{r.BytesIn, r.BytesOut, r.RecordsIn, r.RecordsOut, r.BackPressured.Milliseconds(), r.Idle.Milliseconds(), r.Busy.Milliseconds()} {
			m[i] += x
		}
	}
	complete := info.State.Terminal()
	return map[string]any{
		"read-bytes": m[0], "read-bytes-complete": complete, "write-bytes": m[1], "write-bytes-complete": complete,
		"read-records": m[2], "read-records-complete": complete, "write-records": m[3], "write-records-complete": complete,
		"accumulated-backpressured-time": m[4], "accumulated-idle-time": m[5], "accumulated-busy-time": m[6],
	}
}

// shipStrategies are Flink's names of the partitionings.
var shipStrategies = map[string]string{
	"FORWARD": "FORWARD", "REBALANCE": "REBALANCE", "RESCALE": "RESCALE", "SHUFFLE": "SHUFFLE",
	"BROADCAST": "BROADCAST", "GLOBAL": "GLOBAL", "HASH": "HASH",
}

// planJSON is Flink's JobPlanInfo: one node per vertex, with its inputs'
// ship strategies.
func planJSON(info server.JobInfo) map[string]any {
	g := info.Job.CurrentGraph()
	chainHead := map[int]*plan.Operator{}
	vs := info.Job.Vertices()
	for _, v := range vs {
		for _, op := range v.Operators {
			chainHead[op.ID] = v.Head
		}
	}
	nodes := []map[string]any{}
	for _, v := range vs {
		inputs := []map[string]any{}
		for i, e := range g.Inputs(v.Head.ID) {
			if chainHead[e.From] == v.Head {
				continue // chained
			}
			strategy := shipStrategies[e.Partitioning.String()]
			if strategy == "" {
				strategy = e.Partitioning.String()
			}
			if strategy == "FORWARD" && g.Operators[e.From].Parallelism != v.Head.Parallelism {
				strategy = "REBALANCE"
			}
			inputs = append(inputs, map[string]any{
				"num": i, "id": VertexID(chainHead[e.From].UID), "ship_strategy": strategy,
				"exchange": "pipelined_bounded", "keys": e.Keys,
			})
		}
		node := map[string]any{
			"id": VertexID(v.Head.UID), "parallelism": v.Head.Parallelism, "operator": "",
			"operator_strategy": "", "description": vertexName(v), "optimizer_properties": map[string]any{},
		}
		if len(inputs) > 0 {
			node["inputs"] = inputs
		}
		nodes = append(nodes, node)
	}
	return map[string]any{"jid": info.ID, "name": info.Name, "type": "STREAMING", "nodes": nodes}
}

func (h *Handler) plan(w http.ResponseWriter, r *http.Request) {
	info, ok := h.lookup(w, r)
	if !ok {
		return
	}
	if info.Job == nil {
		writeError(w, http.StatusNotFound, fmt.Sprintf("Job %s never started: it has no plan", info.ID))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"plan": planJSON(info)})
}

func (h *Handler) jobConfig(w http.ResponseWriter, r *http.Request) {
	info, ok := h.lookup(w, r)
	if !ok {
		return
	}
	// Every secret key's value (credentials, the REST token) is hidden.
	cfg := config.Known().Redact(info.Config)
	writeJSON(w, http.StatusOK, map[string]any{"jid": info.ID, "name": info.Name,
		"execution-config": map[string]any{"execution-mode": "PIPELINED", "restart-strategy": cfg["restart-strategy.type"],
			"job-parallelism": cfg["parallelism.default"], "object-reuse-mode": false, "user-config": cfg}})
}

// defaultExceptionsMaxSize is how many history entries /exceptions lists
// without maxSize (Flink's handler's default).
const defaultExceptionsMaxSize = 20

// exceptions serves the job's failures: Flink's JobExceptionsInfoWithHistory.
// exceptionHistory lists every failure the job kept (each a restart
// recovered from, and the one that ended it), newest first, at most
// maxSize; root-exception is the newest. A UDF's failure carries the
// Python traceback in its stack trace.
func (h *Handler) exceptions(w http.ResponseWriter, r *http.Request) {
	info, ok := h.lookup(w, r)
	if !ok {
		return
	}
	maxSize := defaultExceptionsMaxSize
	if v := r.URL.Query().Get("maxSize"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("maxSize=%q: give how many exceptions to list, an integer of at least 0", v))
			return
		}
		maxSize = n
	}
	var history job.FailureHistory
	switch {
	case info.Job != nil:
		history = info.Job.Failures()
	case info.Err != nil && info.State == job.Failed: // it never started
		history.Failures = []job.Failure{{At: info.Ended, Err: info.Err}}
	}
	failures := history.Failures
	entries := []map[string]any{}
	for i := len(failures) - 1; i >= 0 && len(entries) < maxSize; i-- {
		entries = append(entries, exceptionEntry(failures[i]))
	}
	out := map[string]any{"all-exceptions": []any{}, "truncated": false}
	if n := len(failures); n > 0 {
		out["root-exception"], out["timestamp"] = failures[n-1].Err.Error(), failures[n-1].At.UnixMilli()
	}
	// Truncated: entries left out for maxSize, or older failures the job
	// dropped beyond web.exception-history-size.
	truncated := len(entries) < len(failures) || history.Dropped > 0
	out["exceptionHistory"] = map[string]any{"entries": entries, "truncated": truncated}
	writeJSON(w, http.StatusOK, out)
}

// exceptionEntry is one failure as Flink's RootExceptionInfo: named by
// its Python exception's type for a UDF's; the task fields only for the
// failure of one operator subtask (Flink omits them for a global one).
func exceptionEntry(f job.Failure) map[string]any {
	name := f.Exception
	if name == "" {
		name = "RuntimeError"
	}
	e := map[string]any{
		"exceptionName": name, "stacktrace": f.Err.Error(), "timestamp": f.At.UnixMilli(),
		"failureLabels": map[string]string{}, "concurrentExceptions": []any{},
	}
	if f.Operator != "" {
		e["taskName"] = fmt.Sprintf("%s (%d)", f.Operator, f.Subtask)
		e["location"], e["endpoint"], e["taskManagerId"] = "localhost", "localhost", "local"
	}
	return e
}

// cancelJob is PATCH /jobs/:jid?mode=cancel.
func (h *Handler) cancelJob(w http.ResponseWriter, r *http.Request) {
	mode := r.URL.Query().Get("mode")
	if mode != "" && mode != "cancel" {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("mode %q is not supported: use mode=cancel (or POST /jobs/:jid/stop to stop with a savepoint)", mode))
		return
	}
	info, ok := h.running(w, r)
	if !ok {
		return
	}
	if _, err := h.srv.Cancel(r.Context(), &jobpb.CancelRequest{JobId: info.ID}); err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]any{})
}
