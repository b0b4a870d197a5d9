package rest

import (
	"fmt"
	"math"
	"net/http"
	"path/filepath"
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

// GET /jobs/:jid/exceptions of a running job whose Python UDF raised
// three times, each a restart recovered from, with an exception history
// of 2: the history lists the latest two, newest first, each with its
// Python traceback, and says it was truncated; maxSize cuts it further.
func TestExceptionHistoryOfARecoveredJob(t *testing.T) {
	t.Setenv(pluginrunner.PythonEnv, testkit.Python(t))
	testkit.NoLeakedWorkers(t) // registered first: checks after the fixture's cleanup
	f := newFixture(t)
	dir := t.TempDir()
	// Each attempt's worker is a new process: the count of failures so
	// far is kept in a file.
	jid, _ := f.submit(testkit.JobPlan(t, fmt.Sprintf(`
import os
import flinkgo as fg

COUNT = %q

@fg.udf("int64")
def flaky(x):
    n = int(open(COUNT).read()) if os.path.exists(COUNT) else 0
    if n < 3:
        with open(COUNT, "w") as out:
            out.write(str(n + 1))
        raise ValueError(f"flaky failure {n + 1}")
    return x

env = fg.Environment(parallelism=1, config={
    "restart-strategy.type": "fixed-delay", "restart-strategy.fixed-delay.attempts": "3",
    "restart-strategy.fixed-delay.delay": "50 ms", "web.exception-history-size": "2"})
env.datagen(schema={"id": "int64"}, rows_per_second=200).with_column("y", flaky(fg.col("id"))).print()
plan = env.plan("flaky")
`, filepath.Join(dir, "count")), dir))
	var exc object
	var entries []any
	await(t, "the third failure in the history of the running job", func() bool {
		exc = nil
		f.get("/jobs/"+jid+"/exceptions", &exc)
		entries = exc["exceptionHistory"].(object)["entries"].([]any)
		return len(entries) > 0 && strings.Contains(entries[0].(object)["stacktrace"].(string), "flaky failure 3") &&
			f.status(jid) == "RUNNING"
	})
	history := exc["exceptionHistory"].(object)
	if len(entries) != 2 || history["truncated"] != true {
		t.Fatalf("history %v, want the latest 2 of 3 failures, truncated", history)
	}
	for i, want := range []string{"flaky failure 3", "flaky failure 2"} {
		e := entries[i].(object)
		has(t, "exception entry", e, "exceptionName", "stacktrace", "timestamp", "taskName", "location", "endpoint",
			"taskManagerId", "failureLabels", "concurrentExceptions")
		trace := e["stacktrace"].(string)
		for _, in := range []string{"Traceback (most recent call last)", `raise ValueError(f"flaky failure {n + 1}")`, want} {
			if !strings.Contains(trace, in) {
				t.Errorf("entry %d's stack trace lacks %q:\n%s", i, in, trace)
			}
		}
		if e["exceptionName"] != "ValueError" || !strings.HasSuffix(e["taskName"].(string), " (0)") {
			t.Errorf("entry %d: %v", i, e)
		}
	}
	newest, older := entries[0].(object), entries[1].(object)
	if newest["timestamp"].(float64) < older["timestamp"].(float64) {
		t.Errorf("entries not newest first: %v before %v", newest["timestamp"], older["timestamp"])
	}
	if exc["root-exception"] != newest["stacktrace"] || exc["timestamp"] != newest["timestamp"] {
		t.Errorf("root exception %v at %v, want the newest entry's", exc["root-exception"], exc["timestamp"])
	}

	var cut object
	f.get("/jobs/"+jid+"/exceptions?maxSize=1", &cut)
	h := cut["exceptionHistory"].(object)
	if es := h["entries"].([]any); len(es) != 1 || es[0].(object)["stacktrace"] != newest["stacktrace"] || h["truncated"] != true {
		t.Errorf("maxSize=1: %v, want the newest entry only, truncated", h)
	}
	var bad object
	if code := f.call("GET", "/jobs/"+jid+"/exceptions?maxSize=many", "", "", &bad); code != http.StatusBadRequest || bad["errors"] == nil {
		t.Errorf("maxSize=many: %d %v, want 400 with errors", code, bad)
	}
	if code := f.call("PATCH", "/jobs/"+jid+"?mode=cancel", token, "", nil); code != http.StatusAccepted {
		t.Fatalf("cancel: %d", code)
	}
	await(t, "the job to be canceled", func() bool { return f.status(jid) == "CANCELED" })
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
