package rest

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/flinkgo/flinkgo/integration/testkit"
	"github.com/flinkgo/flinkgo/udf/bridge/pluginrunner"
)

// GET /jobs/:jid/exceptions of a job whose Python UDF raised: Flink's
// fields, the exception named by its Python type, the task by the UDF's
// operator and subtask, and the Python traceback as the stack trace.
func TestExceptionsCarryThePythonTraceback(t *testing.T) {
	t.Setenv(pluginrunner.PythonEnv, testkit.Python(t))
	testkit.NoLeakedWorkers(t) // registered first: checks after the fixture's cleanup
	f := newFixture(t)
	jid, _ := f.submit(testkit.JobPlan(t, `
import flinkgo as fg

@fg.udf("int64")
def broken(x):
    return x // 0

env = fg.Environment(parallelism=1)
env.datagen(rows=100, schema={"id": "int64"}).with_column("y", broken(fg.col("id"))).print()
plan = env.plan("failing")
`, t.TempDir()))
	await(t, "the job to fail", func() bool { return f.status(jid) == "FAILED" })
	var exc object
	f.get("/jobs/"+jid+"/exceptions", &exc)
	has(t, "exceptions", exc, "root-exception", "timestamp", "all-exceptions", "truncated", "exceptionHistory")
	history := exc["exceptionHistory"].(object)
	has(t, "exceptionHistory", history, "entries", "truncated")
	entries := history["entries"].([]any)
	if len(entries) != 1 {
		t.Fatalf("exception entries %v, want the one failure", entries)
	}
	e := entries[0].(object)
	has(t, "exception entry", e, "exceptionName", "stacktrace", "timestamp", "taskName", "location", "endpoint",
		"taskManagerId", "failureLabels", "concurrentExceptions")
	trace := e["stacktrace"].(string)
	for _, want := range []string{"Traceback (most recent call last)", "return x // 0", "ZeroDivisionError", "broken"} {
		if !strings.Contains(trace, want) {
			t.Errorf("the stack trace lacks %q:\n%s", want, trace)
		}
	}
	if e["exceptionName"] != "ZeroDivisionError" || !strings.HasSuffix(e["taskName"].(string), " (0)") ||
		e["timestamp"] != exc["timestamp"] || exc["root-exception"] != trace {
		t.Errorf("exception entry %v; root %v at %v", e, exc["root-exception"], exc["timestamp"])
	}
}

// GET /jobs/:jid/vertices/:vid/watermarks of an event-time job: the
// vertex after the watermarks has each subtask's input watermark, which
// datagen's timestamps (the row index in ms) bound; the source's vertex,
// before them, has Flink's Long.MIN_VALUE.
func TestWatermarksOfAnEventTimeJob(t *testing.T) {
	t.Setenv(pluginrunner.PythonEnv, testkit.Python(t))
	f := newFixture(t)
	jid, _ := f.submit(testkit.JobPlan(t, `
import flinkgo as fg

env = fg.Environment(parallelism=1, config={"pipeline.auto-watermark-interval": "50 ms"})
rows = env.datagen(schema={"ts": "timestamp[ms]"}, rows_per_second=500).with_watermark("ts", "0 ms")
rows.rebalance().print().set_parallelism(2)
plan = env.plan("event-time")
`, t.TempDir()))
	await(t, "the job to run", func() bool { return f.status(jid) == "RUNNING" })
	ids := f.vertexIDs(jid)
	src, sink := ids[0], ids[len(ids)-1]
	watermarks := func(vid string) []int64 {
		var wms []object
		f.get("/jobs/"+jid+"/vertices/"+vid+"/watermarks", &wms)
		out := make([]int64, len(wms))
		for i, w := range wms {
			if w["id"] != strconv.Itoa(i)+".currentInputWatermark" {
				t.Fatalf("watermark %d: %v", i, w)
			}
			n, err := strconv.ParseInt(w["value"].(string), 10, 64)
			if err != nil {
				t.Fatalf("watermark %v: %v", w, err)
			}
			out[i] = n
		}
		return out
	}
	var got []int64
	await(t, "watermarks at both sink subtasks", func() bool {
		got = watermarks(sink)
		return len(got) == 2 && got[0] >= 0 && got[1] >= 0
	})
	// Read after the watermarks: the rows generated so far bound them.
	var vals []object
	f.get("/jobs/"+jid+"/vertices/"+src+"/subtasks/metrics?get=numRecordsOut&agg=sum", &vals)
	generated := int64(vals[0]["sum"].(float64))
	for i, wm := range got {
		if wm >= generated {
			t.Errorf("sink subtask %d's watermark %d ms, want below the %d rows' greatest timestamp", i, wm, generated)
		}
	}
	if before := watermarks(src); len(before) != 1 || before[0] != math.MinInt64 {
		t.Errorf("the source's input watermarks %v, want Long.MIN_VALUE (it gets none)", before)
	}
	if code := f.call("PATCH", "/jobs/"+jid+"?mode=cancel", token, "", nil); code != http.StatusAccepted {
		t.Fatalf("cancel: %d", code)
	}
	await(t, "the job to be canceled", func() bool { return f.status(jid) == "CANCELED" })
}
