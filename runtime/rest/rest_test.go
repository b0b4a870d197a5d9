package rest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"go.uber.org/goleak"
	"google.golang.org/grpc"

	"github.com/flinkgo/flinkgo/internal/arrowipc"
	"github.com/flinkgo/flinkgo/internal/poll"
	"github.com/flinkgo/flinkgo/runtime/dashboard"
	"github.com/flinkgo/flinkgo/runtime/job"
	"github.com/flinkgo/flinkgo/runtime/metrics"
	"github.com/flinkgo/flinkgo/runtime/proto/jobpb"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
	"github.com/flinkgo/flinkgo/runtime/server"
)

func TestMain(m *testing.M) {
	if spec := os.Getenv(callerEnv); spec != "" {
		os.Exit(runCaller(spec))
	}
	goleak.VerifyTestMain(m)
}

const token = "s3cret"

// stream is the server side of one Execute call, in memory: it keeps the
// job's id and its final event.
type stream struct {
	grpc.ServerStream
	ctx context.Context

	mu       sync.Mutex
	started  chan string
	finished *jobpb.JobFinished
}

func (s *stream) Send(ev *jobpb.JobEvent) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := ev.GetStarted(); st != nil {
		s.started <- st.GetJobId()
	}
	if f := ev.GetFinished(); f != nil {
		s.finished = f
	}
	return nil
}

func (s *stream) Context() context.Context { return s.ctx }

// fixture is a server with its REST API and Prometheus endpoint on free
// loopback ports.
type fixture struct {
	t          *testing.T
	srv        *server.Server
	ep         *Endpoints
	base, prom string
	client     *http.Client
	jobs       sync.WaitGroup
}

func newFixture(t *testing.T) *fixture {
	// Small source batches: the datagen's rate is even over a second.
	srv := server.New(job.Options{Stdout: io.Discard, SourceBatchRows: 100}, nil)
	ep := NewEndpoints(srv, nil)
	if err := ep.Start(Listen{RESTPort: 0, PromPort: 0, AuthToken: token}); err != nil {
		t.Fatal(err)
	}
	restAddr, promAddr := ep.Addresses()
	f := &fixture{t: t, srv: srv, ep: ep, base: "http://" + restAddr, prom: "http://" + promAddr,
		client: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}}
	t.Cleanup(func() {
		f.jobs.Wait()
		ep.Close()
		srv.Wait()
	})
	return f
}

// numbersPlan is datagen (p=1, rows at rate, 0 for unbounded) rebalanced into a
// print sink of parallelism 2 (its output discarded), checkpointing every 200 ms.
func numbersPlan(t *testing.T, rows int64, rate float64) *planpb.JobPlan {
	schema, err := arrowipc.EncodeSchema(arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	return &planpb.JobPlan{Name: "numbers", DefaultParallelism: 1, Config: map[string]string{
		"execution.checkpointing.interval": "200 ms", "execution.checkpointing.dir": dir + "/chk",
		"execution.checkpointing.savepoint-dir": dir + "/sp",
	}, Nodes: []*planpb.Node{
		{Id: 1, Uid: "gen", Name: "datagen", OutputSchema: schema, Kind: &planpb.Node_Source{Source: &planpb.Source{
			Kind: &planpb.Source_Datagen{Datagen: &planpb.DatagenSource{Rows: rows, RowsPerSecond: rate}}}}},
		{Id: 2, Uid: "out", Name: "print", Parallelism: 2, OutputSchema: schema,
			Inputs: []*planpb.Input{{Node: 1, Partitioning: &planpb.Partitioning{Kind: planpb.Partitioning_REBALANCE}}},
			Kind:   &planpb.Node_Sink{Sink: &planpb.Sink{Kind: &planpb.Sink_Print{Print: &planpb.PrintSink{}}}}},
	}}
}

// submit runs p on the server in the background and returns its id and
// stream.
func (f *fixture) submit(p *planpb.JobPlan) (string, *stream) {
	f.t.Helper()
	s := &stream{ctx: context.Background(), started: make(chan string, 1)}
	ended := make(chan struct{})
	f.jobs.Go(func() {
		defer close(ended)
		if err := f.srv.Execute(&jobpb.ExecuteRequest{Plan: p}, s); err != nil {
			f.t.Errorf("Execute: %v", err)
		}
	})
	select {
	case id := <-s.started:
		return id, s
	case <-ended:
		f.t.Fatalf("the job did not start: %v", s.finished)
		return "", nil
	}
}

// call makes a request and decodes the JSON answer into out (when not
// nil); it returns the status code.
func (f *fixture) call(method, path, auth string, body string, out any) int {
	f.t.Helper()
	req, err := http.NewRequest(method, f.base+path, strings.NewReader(body))
	if err != nil {
		f.t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", "Bearer "+auth)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := f.client.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		f.t.Fatal(err)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			f.t.Fatalf("%s %s: %d %s: %v", method, path, resp.StatusCode, data, err)
		}
	}
	return resp.StatusCode
}

// get is call for a GET that must answer 200.
func (f *fixture) get(path string, out any) {
	f.t.Helper()
	if code := f.call("GET", path, "", "", out); code != http.StatusOK {
		f.t.Fatalf("GET %s: status %d", path, code)
	}
}

// await polls until cond holds (the job's progress is driven by its own
// goroutines: the test waits for a condition, never for a time).
func await(t *testing.T, what string, cond func() bool) {
	t.Helper()
	poll.Until(t, 60*time.Second, what, cond)
}

type object = map[string]any

func has(t *testing.T, where string, o object, keys ...string) {
	t.Helper()
	for _, k := range keys {
		if _, ok := o[k]; !ok {
			t.Errorf("%s lacks %q: %v", where, k, o)
		}
	}
}

func (f *fixture) status(jid string) string {
	var st object
	f.get("/jobs/"+jid+"/status", &st)
	return st["status"].(string)
}

// vertexIDs returns the job's vertex ids, source first.
func (f *fixture) vertexIDs(jid string) []string {
	var d struct {
		Vertices []object `json:"vertices"`
	}
	f.get("/jobs/"+jid, &d)
	var ids []string
	for _, v := range d.Vertices {
		ids = append(ids, v["id"].(string))
	}
	return ids
}

// Every endpoint answers on a running job with the fields Flink's schema
// defines; savepoints, checkpoints and stops are asynchronous.
func TestEndpointsOnARunningJob(t *testing.T) {
	f := newFixture(t)
	jid, s := f.submit(numbersPlan(t, 0, 5000))
	await(t, "the job to run", func() bool { return f.status(jid) == "RUNNING" })

	var cfg object
	f.get("/config", &cfg)
	has(t, "/config", cfg, "refresh-interval", "timezone-name", "timezone-offset", "flink-version", "flink-revision", "features")

	var ov object
	f.get("/overview", &ov)
	has(t, "/overview", ov, "taskmanagers", "slots-total", "slots-available", "jobs-running", "jobs-finished", "jobs-cancelled", "jobs-failed", "flink-version")
	if ov["jobs-running"].(float64) != 1 {
		t.Errorf("/overview jobs-running = %v, want 1", ov["jobs-running"])
	}

	var jobs struct{ Jobs []object }
	f.get("/jobs", &jobs)
	if len(jobs.Jobs) != 1 || jobs.Jobs[0]["id"] != jid || jobs.Jobs[0]["status"] != "RUNNING" {
		t.Errorf("/jobs = %v", jobs.Jobs)
	}
	var jov struct{ Jobs []object }
	f.get("/jobs/overview", &jov)
	if len(jov.Jobs) != 1 {
		t.Fatalf("/jobs/overview = %v", jov.Jobs)
	}
	has(t, "/jobs/overview job", jov.Jobs[0], "jid", "name", "state", "start-time", "end-time", "duration", "last-modification", "tasks")
	if tasks := jov.Jobs[0]["tasks"].(object); tasks["running"] != nil || tasks["RUNNING"].(float64) != 3 {
		t.Errorf("/jobs/overview tasks = %v, want 3 RUNNING (1 source + 2 sink subtasks)", tasks)
	}

	var details object
	f.get("/jobs/"+jid, &details)
	has(t, "/jobs/:jid", details, "jid", "name", "isStoppable", "state", "start-time", "end-time", "duration", "now", "timestamps", "vertices", "status-counts", "plan", "maxParallelism")
	vertices := details["vertices"].([]any)
	if len(vertices) != 2 {
		t.Fatalf("vertices %v, want datagen and collect", vertices)
	}
	src, sink := vertices[0].(object), vertices[1].(object)
	has(t, "vertex", src, "id", "name", "maxParallelism", "parallelism", "status", "start-time", "end-time", "duration", "tasks", "metrics")
	if src["parallelism"].(float64) != 1 || sink["parallelism"].(float64) != 2 || sink["name"] != "print" {
		t.Errorf("vertices %v", vertices)
	}
	has(t, "vertex metrics", src["metrics"].(object), "read-bytes", "read-bytes-complete", "write-bytes", "write-bytes-complete",
		"read-records", "read-records-complete", "write-records", "write-records-complete",
		"accumulated-backpressured-time", "accumulated-idle-time", "accumulated-busy-time")
	nodes := details["plan"].(object)["nodes"].([]any)
	if len(nodes) != 2 {
		t.Fatalf("plan nodes %v", nodes)
	}
	inputs := nodes[1].(object)["inputs"].([]any)
	if len(inputs) != 1 || inputs[0].(object)["ship_strategy"] != "REBALANCE" || inputs[0].(object)["id"] != src["id"] {
		t.Errorf("the sink's plan inputs = %v, want REBALANCE from %v", inputs, src["id"])
	}
	srcID, sinkID := src["id"].(string), sink["id"].(string)

	var vd object
	f.get("/jobs/"+jid+"/vertices/"+sinkID, &vd)
	has(t, "/vertices/:vid", vd, "id", "name", "parallelism", "maxParallelism", "now", "subtasks")
	subtasks := vd["subtasks"].([]any)
	if len(subtasks) != 2 {
		t.Fatalf("subtasks %v", subtasks)
	}
	has(t, "subtask", subtasks[1].(object), "subtask", "status", "attempt", "endpoint", "start-time", "end-time", "duration", "metrics")

	// Records flow: the sink's subtasks take in what the source sends.
	await(t, "records to reach the sink", func() bool {
		var vals []object
		f.get("/jobs/"+jid+"/vertices/"+sinkID+"/subtasks/metrics?get=numRecordsIn&agg=sum", &vals)
		return len(vals) == 1 && vals[0]["sum"].(float64) > 0
	})

	// Every aggregation Flink has, consistent with each other; an unknown
	// one is 400.
	var aggs []object
	f.get("/jobs/"+jid+"/vertices/"+sinkID+"/subtasks/metrics?get=numRecordsIn", &aggs)
	if len(aggs) != 1 {
		t.Fatalf("subtask metrics %v", aggs)
	}
	has(t, "aggregated metric", aggs[0], "id", "min", "max", "avg", "sum", "skew")
	a := func(k string) float64 { return aggs[0][k].(float64) }
	if a("min") > a("avg") || a("avg") > a("max") || a("sum") != 2*a("avg") || a("skew") != 0 && a("skew") != (a("max")-a("avg"))/a("avg")*100 {
		t.Errorf("aggregations of the sink's 2 subtasks inconsistent: %v", aggs[0])
	}
	var badAgg object
	if code := f.call("GET", "/jobs/"+jid+"/vertices/"+sinkID+"/subtasks/metrics?get=numRecordsIn&agg=median", "", "", &badAgg); code != http.StatusBadRequest || badAgg["errors"] == nil {
		t.Errorf("an unknown aggregation: %d %v", code, badAgg)
	}

	var bp object
	f.get("/jobs/"+jid+"/vertices/"+sinkID+"/backpressure", &bp)
	has(t, "backpressure", bp, "status", "backpressureLevel", "end-timestamp", "subtasks")
	for _, st := range bp["subtasks"].([]any) {
		o := st.(object)
		has(t, "backpressure subtask", o, "subtask", "backpressureLevel", "ratio", "idleRatio", "busyRatio")
		for _, k := range []string{"ratio", "idleRatio", "busyRatio"} {
			if r := o[k].(float64); r < 0 || r > 1 {
				t.Errorf("backpressure %s = %v, outside [0, 1]", k, r)
			}
		}
	}

	var wms []object
	f.get("/jobs/"+jid+"/vertices/"+sinkID+"/watermarks", &wms)
	if len(wms) != 2 || wms[0]["id"] != "0.currentInputWatermark" {
		t.Errorf("watermarks %v", wms)
	}

	var names []object
	f.get("/jobs/"+jid+"/vertices/"+srcID+"/metrics", &names)
	if len(names) != len(metrics.TaskMetricNames) {
		t.Errorf("vertex metric list %v", names)
	}
	var vals []object
	f.get("/jobs/"+jid+"/vertices/"+srcID+"/metrics?get=0.numRecordsOut,0.busyTimeMsPerSecond", &vals)
	if len(vals) != 2 || vals[0]["id"] != "0.numRecordsOut" || vals[0]["value"] == "" {
		t.Errorf("vertex metric values %v", vals)
	}
	var bad object
	if code := f.call("GET", "/jobs/"+jid+"/vertices/"+srcID+"/metrics?get=0.nope", "", "", &bad); code != http.StatusBadRequest || bad["errors"] == nil {
		t.Errorf("an unknown metric: %d %v", code, bad)
	}

	await(t, "three periodic checkpoints", func() bool {
		var cp object
		f.get("/jobs/"+jid+"/checkpoints", &cp)
		return cp["counts"].(object)["completed"].(float64) >= 3
	})
	var cps object
	f.get("/jobs/"+jid+"/checkpoints", &cps)
	has(t, "checkpoints", cps, "counts", "summary", "latest", "history")
	has(t, "checkpoint counts", cps["counts"].(object), "restored", "total", "in_progress", "completed", "failed")
	has(t, "checkpoint summary", cps["summary"].(object), "checkpointed_size", "state_size", "end_to_end_duration")
	latest := cps["latest"].(object)["completed"].(object)
	has(t, "latest checkpoint", latest, "id", "status", "is_savepoint", "trigger_timestamp", "latest_ack_timestamp",
		"checkpointed_size", "state_size", "end_to_end_duration", "num_subtasks", "num_acknowledged_subtasks", "external_path")
	if latest["status"] != "COMPLETED" || latest["state_size"].(float64) <= 0 {
		t.Errorf("latest checkpoint %v", latest)
	}
	// Sizes are read when a checkpoint completes: those retention deleted
	// since keep theirs.
	for _, c := range cps["history"].([]any) {
		if c := c.(object); c["status"] == "COMPLETED" && c["state_size"].(float64) <= 0 {
			t.Errorf("checkpoint %v has no size: %v", c["id"], c)
		}
	}
	var cpc object
	f.get("/jobs/"+jid+"/checkpoints/config", &cpc)
	has(t, "checkpoint config", cpc, "mode", "interval", "timeout", "min_pause", "max_concurrent", "externalization", "unaligned_checkpoints", "tolerable_failed_checkpoints")
	if cpc["interval"].(float64) != 200 {
		t.Errorf("checkpoint interval %v, want 200", cpc["interval"])
	}
	if cpc["unaligned_checkpoints"] != false { // execution.checkpointing.unaligned.enabled's default
		t.Errorf("unaligned_checkpoints %v, want false", cpc["unaligned_checkpoints"])
	}

	var exc object
	f.get("/jobs/"+jid+"/exceptions", &exc)
	has(t, "exceptions", exc, "exceptionHistory")

	// A checkpoint on request.
	var trig object
	if code := f.call("POST", "/jobs/"+jid+"/checkpoints", token, "", &trig); code != http.StatusAccepted || trig["request-id"] == nil {
		t.Fatalf("POST checkpoints: %d %v", code, trig)
	}
	var op object
	await(t, "the checkpoint", func() bool {
		f.get("/jobs/"+jid+"/checkpoints/"+trig["request-id"].(string), &op)
		return op["status"].(object)["id"] == "COMPLETED"
	})
	if op["operation"].(object)["checkpointId"].(float64) <= 0 {
		t.Errorf("checkpoint operation %v", op)
	}

	// An unknown request id, or a checkpoint's asked for as a savepoint's,
	// is 404.
	for _, path := range []string{"/savepoints/0123456789abcdef", "/checkpoints/0123456789abcdef", "/savepoints/" + trig["request-id"].(string)} {
		var e object
		if code := f.call("GET", "/jobs/"+jid+path, "", "", &e); code != http.StatusNotFound || e["errors"] == nil {
			t.Errorf("GET %s: %d %v, want 404 with errors", path, code, e)
		}
	}

	// A savepoint, then a stop with a savepoint.
	for _, c := range []struct{ path, body string }{{"/savepoints", `{"cancel-job": false}`}, {"/stop", `{"drain": false}`}} {
		trig = nil
		if code := f.call("POST", "/jobs/"+jid+c.path, token, c.body, &trig); code != http.StatusAccepted || trig["request-id"] == nil {
			t.Fatalf("POST %s: %d %v", c.path, code, trig)
		}
		await(t, "the savepoint", func() bool {
			f.get("/jobs/"+jid+"/savepoints/"+trig["request-id"].(string), &op)
			return op["status"].(object)["id"] == "COMPLETED"
		})
		if loc, _ := op["operation"].(object)["location"].(string); !strings.Contains(loc, "/sp/") {
			t.Errorf("savepoint operation %v", op)
		}
	}
	await(t, "the stopped job to finish", func() bool { return f.status(jid) == "FINISHED" })
	f.jobs.Wait()
	if s.finished.GetState() != jobpb.JobFinished_FINISHED {
		t.Errorf("the job ended %v", s.finished)
	}
	if code := f.call("GET", "/jobs/nope", "", "", &bad); code != http.StatusNotFound || len(bad["errors"].([]any)) != 1 {
		t.Errorf("an unknown job: %d %v", code, bad)
	}
	if code := f.call("PATCH", "/jobs/"+jid+"?mode=cancel", token, "", &bad); code != http.StatusConflict {
		t.Errorf("canceling a finished job: %d %v", code, bad)
	}
}

// A wrong token is refused (401, the job untouched) even from a user the
// server admits without one; the right one cancels. (Callers without a
// token: TestAnotherUserCannotChangeOrReadJobs.)
func TestAWrongTokenIsRefused(t *testing.T) {
	f := newFixture(t)
	jid, _ := f.submit(numbersPlan(t, 0, 1000))
	await(t, "the job to run", func() bool { return f.status(jid) == "RUNNING" })
	for _, c := range []struct{ method, path string }{
		{"PATCH", "/jobs/" + jid + "?mode=cancel"}, {"POST", "/jobs/" + jid + "/stop"},
		{"POST", "/jobs/" + jid + "/savepoints"}, {"POST", "/jobs/" + jid + "/checkpoints"},
	} {
		for _, auth := range []string{"wrong"} {
			var e object
			if code := f.call(c.method, c.path, auth, "{}", &e); code != http.StatusUnauthorized || e["errors"] == nil {
				t.Errorf("%s %s with token %q: %d %v, want 401", c.method, c.path, auth, code, e)
			}
		}
	}
	if st := f.status(jid); st != "RUNNING" {
		t.Fatalf("refused calls changed the job: %s", st)
	}
	if code := f.call("PATCH", "/jobs/"+jid+"?mode=cancel", token, "", nil); code != http.StatusAccepted {
		t.Fatalf("cancel with the token: %d", code)
	}
	await(t, "the job to be canceled", func() bool { return f.status(jid) == "CANCELED" })
}

// An autoscaler's reads (Flink's Kubernetes operator: /jobs/:jid, then
// each vertex's subtask metrics with agg=max) give the job's real rates,
// and after the job the counts equal the rows generated.
func TestAutoscalerReadsMatchTheJob(t *testing.T) {
	f := newFixture(t)
	const rows, rate = 20000, 4000.0
	jid, _ := f.submit(numbersPlan(t, rows, rate))
	await(t, "the job to run", func() bool { return f.status(jid) == "RUNNING" })
	ids := f.vertexIDs(jid)
	read := func(vid, metric, agg string) float64 {
		var vals []object
		f.get(fmt.Sprintf("/jobs/%s/vertices/%s/subtasks/metrics?get=%s&agg=%s", jid, vid, metric, agg), &vals)
		if len(vals) != 1 || vals[0]["id"] != metric {
			t.Fatalf("subtask metrics %v", vals)
		}
		return vals[0][agg].(float64)
	}
	// Once two samples (a second apart) cover the run, the source's rate
	// is the datagen's.
	var out float64
	await(t, "the source's rate", func() bool {
		if f.status(jid) != "RUNNING" {
			t.Fatal("the job ended before its rate was read")
		}
		out = read(ids[0], "numRecordsOutPerSecond", "max")
		return time.Since(startOf(t, f, jid)) > 2*time.Second && out > 0
	})
	if out < rate/3 || out > rate*2 {
		t.Errorf("source numRecordsOutPerSecond (max) = %.0f, want about %.0f", out, rate)
	}
	in := read(ids[1], "numRecordsInPerSecond", "sum")
	if in < rate/3 || in > rate*2 {
		t.Errorf("sink numRecordsInPerSecond (sum) = %.0f, want about %.0f", in, rate)
	}
	busy := read(ids[1], "busyTimeMsPerSecond", "max")
	idle := read(ids[1], "idleTimeMsPerSecond", "max")
	t.Logf("datagen at %.0f rows/s: source numRecordsOutPerSecond max %.0f, sink numRecordsInPerSecond sum %.0f, sink busy %.0f / idle %.0f ms/s (max)", rate, out, in, busy, idle)
	if busy < 0 || busy > 1000 || idle < 0 || idle > 1000 {
		t.Errorf("sink busy %v, idle %v ms/s", busy, idle)
	}
	await(t, "the job to finish", func() bool { return f.status(jid) == "FINISHED" })
	var d struct{ Vertices []object }
	f.get("/jobs/"+jid, &d)
	srcOut := d.Vertices[0]["metrics"].(object)["write-records"].(float64)
	sinkIn := d.Vertices[1]["metrics"].(object)["read-records"].(float64)
	if srcOut != rows || sinkIn != rows {
		t.Errorf("write-records of the source %v, read-records of the sink %v; want %d", srcOut, sinkIn, rows)
	}
	if d.Vertices[1]["metrics"].(object)["read-bytes"].(float64) < rows*8 {
		t.Errorf("sink read-bytes %v, want at least 8 bytes per int64 row", d.Vertices[1]["metrics"])
	}
}

func startOf(t *testing.T, f *fixture, jid string) time.Time {
	var d object
	f.get("/jobs/"+jid, &d)
	return time.UnixMilli(int64(d["start-time"].(float64)))
}

// /metrics is Prometheus's text format, as its own parser reads it, with
// Flink's metric names and labels.
func TestPrometheusEndpointParses(t *testing.T) {
	f := newFixture(t)
	jid, _ := f.submit(numbersPlan(t, 0, 2000))
	await(t, "the job to run", func() bool { return f.status(jid) == "RUNNING" })
	for _, url := range []string{f.prom + "/metrics", f.base + "/metrics"} {
		var families map[string]*dto.MetricFamily
		await(t, "records in the scrape", func() bool {
			families = scrape(t, f.client, url)
			fam := families["flink_taskmanager_job_task_numRecordsOut"]
			return fam != nil && sumFor(fam, jid) > 0
		})
		for _, name := range []string{
			"flink_taskmanager_job_task_numRecordsIn", "flink_taskmanager_job_task_numBytesOut",
			"flink_taskmanager_job_task_busyTimeMsPerSecond", "flink_taskmanager_job_task_backPressuredTimeMsPerSecond",
			"flink_taskmanager_job_task_currentInputWatermark", "flink_taskmanager_job_task_operator_numRecordsIn",
			"flink_jobmanager_job_numRestarts", "flink_jobmanager_job_uptime",
		} {
			if families[name] == nil {
				t.Errorf("%s: no %s", url, name)
			}
		}
		labels := map[string]bool{}
		for _, m := range families["flink_taskmanager_job_task_numRecordsIn"].GetMetric() {
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = true
			}
		}
		for _, l := range taskLabels {
			if !labels[l] {
				t.Errorf("task metrics lack the label %s", l)
			}
		}
	}
	if code := f.call("PATCH", "/jobs/"+jid+"?mode=cancel", token, "", nil); code != http.StatusAccepted {
		t.Fatalf("cancel: %d", code)
	}
}

func scrape(t *testing.T, c *http.Client, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var p expfmt.TextParser
	families, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("%s does not parse: %v", url, err)
	}
	return families
}

func sumFor(fam *dto.MetricFamily, jid string) float64 {
	var sum float64
	for _, m := range fam.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "job_id" && l.GetValue() == jid {
				sum += m.GetGauge().GetValue()
			}
		}
	}
	return sum
}

// FLIP-291: GET lists each vertex's bounds; a PUT with bad bounds or an
// unknown vertex is refused with Flink's errors, a good one rescales the
// running job at its next checkpoint.
func TestResourceRequirementsRescaleTheJob(t *testing.T) {
	f := newFixture(t)
	jid, _ := f.submit(numbersPlan(t, 0, 1000))
	await(t, "the job to run", func() bool { return f.status(jid) == "RUNNING" })
	path := "/jobs/" + jid + "/resource-requirements"
	var got map[string]map[string]map[string]int
	f.get(path, &got)
	ids := f.vertexIDs(jid)
	if len(got) != len(ids) {
		t.Fatalf("requirements %v, want one per vertex %v", got, ids)
	}
	sink := ids[len(ids)-1]
	if b := got[sink]["parallelism"]; b["lowerBound"] != 1 || b["upperBound"] != 2 {
		t.Fatalf("sink bounds %v, want lowerBound 1, upperBound 2", b)
	}
	for _, body := range []string{
		`{"0123456789abcdef0123456789abcdef": {"parallelism": {"lowerBound": 1, "upperBound": 2}}}`,
		`{"` + sink + `": {"parallelism": {"lowerBound": 3, "upperBound": 2}}}`,
		`{"` + sink + `": {"parallelism": {"lowerBound": 0, "upperBound": 2}}}`,
		`{"` + sink + `": {"parallelism": {"lowerBound": 1, "upperBound": 100000}}}`,
	} {
		var e object
		if code := f.call("PUT", path, token, body, &e); code != http.StatusBadRequest || e["errors"] == nil {
			t.Errorf("PUT %s: %d %v, want 400 with errors", body, code, e)
		}
	}
	var e object
	if code := f.call("PUT", path, "wrong", `{}`, &e); code != http.StatusUnauthorized {
		t.Errorf("PUT with a wrong token: %d %v, want 401", code, e)
	}
	if code := f.call("PUT", path, token, `{"`+sink+`": {"parallelism": {"lowerBound": 1, "upperBound": 3}}}`, nil); code != http.StatusOK {
		t.Fatalf("PUT upperBound 3: %d", code)
	}
	await(t, "the sink to run at parallelism 3", func() bool {
		var now map[string]map[string]map[string]int
		return f.call("GET", path, "", "", &now) == http.StatusOK && now[sink]["parallelism"]["upperBound"] == 3
	})
	// The rescaled job's rates are its new tasks' (the sampler follows the
	// task set): all three subtasks take rows.
	await(t, "each new sink subtask's rate", func() bool {
		var rates []object
		f.get("/jobs/"+jid+"/vertices/"+sink+"/subtasks/metrics?get=numRecordsInPerSecond&agg=min,sum", &rates)
		return rates[0]["min"].(float64) > 0
	})
	var subtasks object
	f.get("/jobs/"+jid+"/vertices/"+sink, &subtasks)
	if n := len(subtasks["subtasks"].([]any)); n != 3 {
		t.Errorf("the rescaled sink has %d subtasks, want 3", n)
	}
	checkRescaleHistory(t, f, jid, sink)
	if code := f.call("PATCH", "/jobs/"+jid+"?mode=cancel", token, "", nil); code != http.StatusAccepted {
		t.Fatalf("cancel: %d", code)
	}
	await(t, "the job to be canceled", func() bool { return f.status(jid) == "CANCELED" })
}

// The REST server serves the dashboard (package dashboard) at / with its
// Content-Security-Policy, and nothing under /v1 but the API.
func TestServesTheDashboard(t *testing.T) {
	f := newFixture(t)
	for path, want := range map[string]int{"/": http.StatusOK, "/index.html": http.StatusOK, "/static/app.js": http.StatusOK, "/v1/": http.StatusNotFound} {
		resp, err := f.client.Get(f.base + path)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s: %d, want %d", path, resp.StatusCode, want)
		}
		if want == http.StatusOK && resp.Header.Get("Content-Security-Policy") != dashboard.ContentSecurityPolicy {
			t.Errorf("GET %s: Content-Security-Policy %q", path, resp.Header.Get("Content-Security-Policy"))
		}
	}
}

// checkRescaleHistory checks Flink 2.3's rescale history of a job whose
// sink was rescaled 2 -> 3 through the PUT: the overview counts one
// completed rescale and shows it with Flink's fields, the history lists it.
func checkRescaleHistory(t *testing.T, f *fixture, jid, sink string) {
	t.Helper()
	var ov object
	await(t, "the completed rescale in the overview", func() bool {
		f.get("/jobs/"+jid+"/rescales/overview", &ov)
		return ov["rescalesCounts"].(object)["completed"].(float64) == 1
	})
	has(t, "rescales overview", ov, "rescalesCounts", "latest")
	counts := ov["rescalesCounts"].(object)
	has(t, "rescalesCounts", counts, "ignored", "inProgress", "completed", "failed")
	if counts["inProgress"].(float64) != 0 || counts["failed"].(float64) != 0 {
		t.Errorf("rescalesCounts %v, want one completed only", counts)
	}
	latest := ov["latest"].(object)
	has(t, "latest rescales", latest, "completed", "failed", "ignored")
	if latest["failed"] != nil || latest["ignored"] != nil {
		t.Errorf("latest %v: want no failed or ignored rescale", latest)
	}
	done := latest["completed"].(object)
	has(t, "latest completed rescale", done, "rescaleUuid", "resourceRequirementsUuid", "rescaleAttemptId", "vertices", "slots",
		"startTimestampInMillis", "endTimestampInMillis", "terminalState", "triggerCause", "terminatedReason",
		"durationInMillis", "restartDurationInMillis", "checkpointId")
	if done["terminalState"] != "COMPLETED" || done["triggerCause"] != "UPDATE_REQUIREMENT" || done["terminatedReason"] != "SUCCEEDED" ||
		done["trigger"] != "COMPLETED_CHECKPOINT" {
		t.Errorf("completed rescale %v", done)
	}
	start, end := done["startTimestampInMillis"].(float64), done["endTimestampInMillis"].(float64)
	if end < start || done["durationInMillis"].(float64) != end-start || done["checkpointId"].(float64) <= 0 {
		t.Errorf("rescale times: start %v end %v duration %v checkpoint %v", start, end, done["durationInMillis"], done["checkpointId"])
	}
	vertices := done["vertices"].(object)
	if len(vertices) != 2 {
		t.Fatalf("rescale vertices %v, want the source and the sink", vertices)
	}
	sv := vertices[sink].(object)
	has(t, "rescale vertex", sv, "jobVertexId", "jobVertexName", "slotSharingGroupId", "slotSharingGroupName",
		"desiredParallelism", "sufficientParallelism", "preRescaleParallelism", "postRescaleParallelism")
	if sv["jobVertexId"] != sink || sv["preRescaleParallelism"].(float64) != 2 || sv["postRescaleParallelism"].(float64) != 3 ||
		sv["desiredParallelism"].(float64) != 3 {
		t.Errorf("the sink's rescale %v, want 2 -> 3", sv)
	}
	for vid, v := range vertices {
		if o := v.(object); vid != sink && (o["preRescaleParallelism"].(float64) != 1 || o["postRescaleParallelism"].(float64) != 1) {
			t.Errorf("the source's rescale %v, want 1 -> 1", o)
		}
	}
	var history []object
	f.get("/jobs/"+jid+"/rescales/history", &history)
	if len(history) != 1 || history[0]["rescaleUuid"] != done["rescaleUuid"] {
		t.Errorf("rescale history %v, want the one completed rescale", history)
	}
	checkRescaleSummary(t, f, jid, done)
	var rc object
	f.get("/jobs/"+jid+"/rescales/config", &rc)
	has(t, "rescales config", rc, "rescaleHistoryMax", "schedulerExecutionMode", "submissionResourceWaitTimeoutInMillis",
		"submissionResourceStabilizationTimeoutInMillis", "slotIdleTimeoutInMillis", "executingCooldownTimeoutInMillis",
		"executingResourceStabilizationTimeoutInMillis", "maximumDelayForTriggeringRescaleInMillis", "rescaleOnFailedCheckpointCount")
	if rc["executingCooldownTimeoutInMillis"] != 30000.0 || rc["rescaleOnFailedCheckpointCount"] != 2.0 || rc["rescaleHistoryMax"] != nil {
		t.Errorf("rescales config %v, want the default cooldown 30 s and 2 failed checkpoints, no history bound", rc)
	}
	var e object
	if code := f.call("GET", "/jobs/nope/rescales/overview", "", "", &e); code != http.StatusNotFound || e["errors"] == nil {
		t.Errorf("the rescales of an unknown job: %d %v", code, e)
	}
}

// checkRescaleSummary checks Flink 2.3's /rescales/summary and
// /rescales/details/:rescaleuuid of a job with the one completed rescale
// done: the summary counts it and its duration is every statistic of the
// completed and of all rescales; its details are the history's entry; an
// unknown id is 404 and a malformed one 400, with Flink's errors.
func checkRescaleSummary(t *testing.T, f *fixture, jid string, done object) {
	t.Helper()
	var sum object
	f.get("/jobs/"+jid+"/rescales/summary", &sum)
	has(t, "rescales summary", sum, "rescalesCounts", "rescalesDurationStatsInMillis", "completedRescalesDurationStatsInMillis",
		"ignoredRescalesDurationStatsInMillis", "failedRescalesDurationStatsInMillis")
	counts := sum["rescalesCounts"].(object)
	if counts["completed"].(float64) != 1 || counts["failed"].(float64) != 0 || counts["ignored"].(float64) != 0 || counts["inProgress"].(float64) != 0 {
		t.Errorf("summary rescalesCounts %v, want one completed only", counts)
	}
	stats := []string{"min", "max", "avg", "p50", "p90", "p95", "p99", "p999"}
	took := done["durationInMillis"].(float64)
	for _, field := range []string{"rescalesDurationStatsInMillis", "completedRescalesDurationStatsInMillis"} {
		st := sum[field].(object)
		has(t, field, st, stats...)
		for _, k := range stats {
			if st[k].(float64) != took {
				t.Errorf("%s.%s = %v, want the one rescale's duration %v", field, k, st[k], took)
			}
		}
	}
	for _, field := range []string{"ignoredRescalesDurationStatsInMillis", "failedRescalesDurationStatsInMillis"} {
		st := sum[field].(object)
		has(t, field, st, stats...)
		if st["max"].(float64) != 0 {
			t.Errorf("%s %v, want zeros (no such rescale)", field, st)
		}
	}
	id := done["rescaleUuid"].(string)
	var d object
	f.get("/jobs/"+jid+"/rescales/details/"+id, &d)
	for _, k := range []string{"rescaleUuid", "triggerCause", "terminalState", "terminatedReason", "startTimestampInMillis",
		"endTimestampInMillis", "durationInMillis", "checkpointId"} {
		if d[k] != done[k] {
			t.Errorf("details %s = %v, the overview has %v", k, d[k], done[k])
		}
	}
	if got, want := fmt.Sprint(d["vertices"]), fmt.Sprint(done["vertices"]); got != want {
		t.Errorf("details vertices %s, the overview has %s", got, want)
	}
	for path, want := range map[string]int{
		"/jobs/" + jid + "/rescales/details/0123456789abcdef0123456789abcdef": http.StatusNotFound,
		"/jobs/" + jid + "/rescales/details/not-an-id":                        http.StatusBadRequest,
		"/jobs/0123456789abcdef0123456789abcdef/rescales/details/" + id:       http.StatusNotFound,
		"/jobs/0123456789abcdef0123456789abcdef/rescales/summary":             http.StatusNotFound,
	} {
		var e object
		code := f.call("GET", path, "", "", &e)
		if errs, _ := e["errors"].([]any); code != want || len(errs) == 0 {
			t.Errorf("GET %s: %d %v, want %d with errors", path, code, e, want)
		}
	}
}
