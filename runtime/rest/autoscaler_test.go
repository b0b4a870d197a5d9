package rest

import (
	"net/http"
	"testing"
)

// GET /jobs/:jid/autoscaler (flinkgo's path) on a job without UDF bounds
// or the autoscaler: its settings, no vertex, no decision; the decisions
// with bounds are shown by integration's TestAutoscalerFollowsSteppedInputRate.
func TestAutoscalerEndpoint(t *testing.T) {
	f := newFixture(t)
	jid, _ := f.submit(numbersPlan(t, 0, 1000))
	await(t, "the job to run", func() bool { return f.status(jid) == "RUNNING" })
	var a object
	f.get("/jobs/"+jid+"/autoscaler", &a)
	has(t, "autoscaler", a, "enabled", "config", "vertices", "decisions")
	cfg := a["config"].(object)
	if a["enabled"] != false || cfg["job.autoscaler.utilization.target"] != 0.7 || cfg["job.autoscaler.metrics.window"] != float64(15*60*1000) ||
		len(a["vertices"].([]any)) != 0 || len(a["decisions"].([]any)) != 0 {
		t.Fatalf("autoscaler of a job without it: %v", a)
	}
	var e object
	if code := f.call("GET", "/jobs/0123456789abcdef0123456789abcdef/autoscaler", "", "", &e); code != http.StatusNotFound || e["errors"] == nil {
		t.Fatalf("unknown job: %d %v", code, e)
	}
	if code := f.call("PATCH", "/jobs/"+jid+"?mode=cancel", token, "", nil); code != http.StatusAccepted {
		t.Fatalf("cancel: %d", code)
	}
	await(t, "the job to be canceled", func() bool { return f.status(jid) == "CANCELED" })
}

// After a rescale (the autoscaler's, or a PUT), the rates are the new
// subtasks' (the sampler reads the job's current tasks; it read the first
// graph's, and a REST call after 2 -> 3 panicked with index out of range).
func TestRatesFollowARescale(t *testing.T) {
	f := newFixture(t)
	jid, _ := f.submit(numbersPlan(t, 0, 1000))
	await(t, "the job to run", func() bool { return f.status(jid) == "RUNNING" })
	ids := f.vertexIDs(jid)
	sink := ids[len(ids)-1]
	path := "/jobs/" + jid + "/resource-requirements"
	if code := f.call("PUT", path, token, `{"`+sink+`": {"parallelism": {"lowerBound": 1, "upperBound": 3}}}`, nil); code != http.StatusOK {
		t.Fatalf("PUT upperBound 3: %d", code)
	}
	await(t, "the sink to run at parallelism 3", func() bool {
		var now map[string]map[string]map[string]int
		return f.call("GET", path, "", "", &now) == http.StatusOK && now[sink]["parallelism"]["upperBound"] == 3
	})
	await(t, "the rates of the rescaled sink's three subtasks", func() bool {
		var vals []object
		f.get("/jobs/"+jid+"/vertices/"+sink+"/subtasks/metrics?get=numRecordsInPerSecond&agg=min", &vals)
		return len(vals) == 1 && vals[0]["min"].(float64) > 0
	})
	if code := f.call("PATCH", "/jobs/"+jid+"?mode=cancel", token, "", nil); code != http.StatusAccepted {
		t.Fatalf("cancel: %d", code)
	}
	await(t, "the job to be canceled", func() bool { return f.status(jid) == "CANCELED" })
}
