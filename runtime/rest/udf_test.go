package rest

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/flinkgo/flinkgo/integration/testkit"
	"github.com/flinkgo/flinkgo/runtime/metrics"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
	"github.com/flinkgo/flinkgo/udf/bridge/pluginrunner"
)

// udfPlan is, from Python, an unbounded datagen (2 000 rows/s) → a pandas
// UDF plus_one at parallelism 2 → print (discarded by the fixture).
func udfPlan(t *testing.T) *planpb.JobPlan {
	t.Helper()
	return testkit.JobPlan(t, `
import flinkgo as fg

@fg.udf("int64", func_type="pandas", batch_size=100)
def plus_one(s):
    return s + 1

env = fg.Environment(parallelism=2)
df = env.datagen(schema={"id": "int64"}, rows_per_second=2000).set_parallelism(1)
df.with_column("y", plus_one(fg.col("id"))).print()
plan = env.plan("udf-metrics")
`, t.TempDir())
}

// udfVertex returns the id of the job's vertex that runs the UDF and the
// UDF operator's name, from the vertex metric list.
func (f *fixture) udfVertex(jid string) (vid, op string) {
	f.t.Helper()
	for _, id := range f.vertexIDs(jid) {
		var names []object
		f.get("/jobs/"+jid+"/vertices/"+id+"/subtasks/metrics", &names)
		for _, n := range names {
			if op, ok := strings.CutSuffix(n["id"].(string), "."+metrics.UDFNumBatches); ok {
				return id, op
			}
		}
	}
	f.t.Fatalf("no vertex of job %s lists %s", jid, metrics.UDFNumBatches)
	return "", ""
}

// A job with a real Python UDF shows its UDF metrics, per operator
// subtask, in the vertex metrics, the aggregated subtask metrics and the
// Prometheus scrape (parsed with Prometheus's text parser).
func TestUDFMetricsOfARunningJob(t *testing.T) {
	t.Setenv(pluginrunner.PythonEnv, testkit.Python(t))
	testkit.NoLeakedWorkers(t) // registered first: checks after the fixture's cleanup
	f := newFixture(t)
	jid, _ := f.submit(udfPlan(t))
	await(t, "the job to run", func() bool { return f.status(jid) == "RUNNING" })
	vid, op := f.udfVertex(jid)

	// Each subtask's worker has answered batches.
	base := "/jobs/" + jid + "/vertices/" + vid
	var names []object
	f.get(base+"/metrics", &names)
	listed := map[string]bool{}
	for _, n := range names {
		listed[n["id"].(string)] = true
	}
	for i := range 2 {
		for _, n := range metrics.UDFMetricNames {
			if id := fmt.Sprintf("%d.%s.%s", i, op, n); !listed[id] {
				t.Errorf("the vertex metrics do not list %s", id)
			}
		}
	}
	get := fmt.Sprintf("0.%[1]s.%[2]s,1.%[1]s.%[2]s", op, metrics.UDFWorkerTimeMsPerBatch)
	await(t, "batches answered by both subtasks' workers", func() bool {
		var vals []object
		f.get(base+"/metrics?get="+url.QueryEscape(get), &vals)
		for _, v := range vals {
			if n, _ := strconv.ParseFloat(v["value"].(string), 64); n == 0 {
				return false
			}
		}
		return len(vals) == 2
	})
	values := map[string]float64{}
	var ids []string
	for _, n := range metrics.UDFMetricNames {
		ids = append(ids, fmt.Sprintf("0.%s.%s", op, n))
	}
	var vals []object
	f.get(base+"/metrics?get="+url.QueryEscape(strings.Join(ids, ",")), &vals)
	for _, v := range vals {
		x, err := strconv.ParseFloat(v["value"].(string), 64)
		if err != nil {
			t.Fatalf("metric %v: %v", v, err)
		}
		values[v["id"].(string)[len("0.")+len(op)+1:]] = x
	}
	t.Logf("subtask 0 of %s: %v", op, values)
	if values[metrics.UDFNumRecords] < values[metrics.UDFNumBatches] || values[metrics.UDFWorkerTimeMsPerBatch] <= 0 ||
		values[metrics.UDFAccumulatedWorkerTime] < 0 || values[metrics.UDFNumWorkerRestarts] != 0 ||
		values[metrics.UDFBatchesInFlight] < 0 || values[metrics.UDFBatchesInFlight] > 4 {
		t.Errorf("UDF metrics of subtask 0: %v", values)
	}
	// The worker is a Python interpreter with pandas: tens of MB.
	if rss := values[metrics.UDFWorkerRssBytes]; rss < 10<<20 {
		t.Errorf("%s = %v, want the worker's resident memory (over 10 MiB)", metrics.UDFWorkerRssBytes, rss)
	}

	var agg []object
	f.get(base+"/subtasks/metrics?agg=sum,max&get="+url.QueryEscape(op+".udfNumRecords"), &agg)
	if len(agg) != 1 || agg[0]["sum"].(float64) <= 0 || agg[0]["max"].(float64) > agg[0]["sum"].(float64) {
		t.Errorf("aggregated udfNumRecords %v", agg)
	}
	var bad object
	if code := f.call("GET", base+"/metrics?get="+url.QueryEscape("0."+op+".nope"), "", "", &bad); code != http.StatusBadRequest {
		t.Errorf("an unknown UDF metric: %d %v", code, bad)
	}

	// Prometheus: each operator subtask with Flink's operator labels.
	var families map[string]*dto.MetricFamily
	await(t, "UDF metrics in the scrape", func() bool {
		families = scrape(t, f.client, f.prom+"/metrics")
		fam := families[operatorScope+metrics.UDFNumBatches]
		return fam != nil && len(fam.GetMetric()) == 2 && sumFor(fam, jid) > 0
	})
	for _, n := range metrics.UDFMetricNames {
		fam := families[operatorScope+n]
		if fam == nil {
			t.Errorf("the scrape has no %s", operatorScope+n)
			continue
		}
		subtasks := map[string]bool{}
		for _, m := range fam.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			for _, l := range udfLabels {
				if _, ok := labels[l]; !ok {
					t.Errorf("%s lacks the label %s: %v", n, l, labels)
				}
			}
			if labels["operator_name"] != op || labels["task_id"] != vid {
				t.Errorf("%s labels %v, want operator %s of vertex %s", n, labels, op, vid)
			}
			subtasks[labels["subtask_index"]] = true
		}
		if !subtasks["0"] || !subtasks["1"] {
			t.Errorf("%s: subtasks %v, want 0 and 1", n, subtasks)
		}
	}
	if rss := sumFor(families[operatorScope+metrics.UDFWorkerRssBytes], jid); rss < 20<<20 {
		t.Errorf("scraped worker RSS %v over both subtasks, want over 20 MiB", rss)
	}

	if code := f.call("PATCH", "/jobs/"+jid+"?mode=cancel", token, "", nil); code != http.StatusAccepted {
		t.Fatalf("cancel: %d", code)
	}
	await(t, "the job to be canceled", func() bool { return f.status(jid) == "CANCELED" })
}
