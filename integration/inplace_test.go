package integration_test

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flinkgo/flinkgo/integration/testkit"
	"github.com/flinkgo/flinkgo/internal/poll"
	"github.com/flinkgo/flinkgo/runtime/job"
	"github.com/flinkgo/flinkgo/runtime/proto/jobpb"
	"github.com/flinkgo/flinkgo/runtime/rest"
	"github.com/flinkgo/flinkgo/runtime/server"
	"github.com/flinkgo/flinkgo/udf/bridge/pluginrunner"
)

// A stateless pandas UDF (concurrency 1) answering, per row, its input
// (so a result joined with the wrong row shows), the pid of the worker
// that computed it and when. No checkpointing: an in-place rescale needs
// none.
const inPlaceRows = 24000

const inPlacePipeline = `
import os
import time
import pandas as pd
import flinkgo as fg
from flinkgo import udf

DIR = os.environ["FLINKGO_TEST_DIR"]

@udf("int64", func_type="pandas", batch_size=100)
def echo(x: pd.Series) -> pd.Series:
    return x

@udf("int64", func_type="pandas", batch_size=100)
def pid(x: pd.Series) -> pd.Series:
    return pd.Series([os.getpid()] * len(x), dtype="int64")

@udf("float64", func_type="pandas", batch_size=100)
def at(x: pd.Series) -> pd.Series:
    time.sleep(0.002)
    return pd.Series([time.time()] * len(x), dtype="float64")

env = fg.Environment(parallelism=1)
rows = env.datagen(rows=24000, rows_per_second=2000, schema={"id": "int64"}).uid("numbers")
scored = rows.rebalance().with_columns(seen=echo(fg.col("id")), pid=pid(fg.col("id")), at=at(fg.col("id"))).uid("score")
scored.rebalance().write_csv(DIR + "/out").uid("files")
plan = env.plan("in place")
`

// inPlaceRow is one output row.
type inPlaceRow struct {
	id, seen, pid int64
	at            float64
}

// A stateless UDF operator grown 1 → 3 workers while the job runs through
// Job.Rescale, then shrunk 3 → 1 through the REST API's PUT
// resource-requirements: the job never restarts, every row comes out
// once, in order, joined with its own result; three workers computed
// rows; after the two retired workers exited, only the first one did; the
// REST API shows the vertex's workers; no worker outlives the job.
func TestStatelessUDFResizedInPlace(t *testing.T) {
	testkit.NoLeakedWorkers(t)
	dir := t.TempDir()
	jp := testkit.JobPlan(t, inPlacePipeline, dir)
	srv := server.New(job.Options{Stdout: io.Discard, SourceBatchRows: 100,
		Runner: pluginrunner.Options{Python: testkit.Python(t)}}, nil)
	handler := rest.New(rest.Options{Server: srv})
	api := httptest.NewServer(handler)
	defer handler.Close()
	defer api.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stream := &executeStream{ctx: ctx, started: make(chan string, 1)}
	done := make(chan error, 1)
	go func() { done <- srv.Execute(&jobpb.ExecuteRequest{Plan: jp}, stream) }()
	defer srv.Wait()
	var id string
	select {
	case id = <-stream.started:
	case err := <-done:
		t.Fatalf("the job ended before it started: %v", err)
	}
	var info server.JobInfo
	poll.Until(t, time.Minute, "the job to run", func() bool {
		info, _ = srv.JobInfo(id)
		if info.State.Terminal() {
			t.Fatalf("the job failed to start: %v", info.Err)
		}
		return info.Job != nil && info.Job.State() == job.Running
	})
	j := info.Job
	// Running comes before the UDF operator has started its worker.
	poll.Until(t, 30*time.Second, "the UDF's worker to start", func() bool {
		pids := testkit.ChildPids()
		if len(pids) > 1 {
			t.Fatalf("worker processes before the rescale: %v, want 1", pids)
		}
		return len(pids) == 1
	})
	// answered is how many batches the UDF's workers (of its one fused UDF
	// operator) have answered so far.
	answered := func() int64 {
		var n int64
		for _, v := range j.Vertices() {
			for _, u := range v.UDFs {
				for _, m := range u.Subtasks {
					n += m.Answered.Load()
				}
			}
		}
		return n
	}
	// answeredAtLeast waits until the workers answered n batches, failing if
	// the job ends first (too few rows for the test).
	answeredAtLeast := func(n int64, what string) {
		t.Helper()
		poll.Until(t, time.Minute, what, func() bool {
			if j.State().Terminal() {
				t.Fatalf("the job ended (%s) before %s: raise the rows", j.State(), what)
			}
			return answered() >= n
		})
	}

	udfVertex := job.VertexID("score/udf-0")
	resize := func(n int, request func() job.RescaleInfo) (job.RescaleInfo, time.Time) {
		t.Helper()
		requested := time.Now()
		r := request()
		if r.Mode != job.ModeInPlace || r.Trigger != job.TriggerInPlace || r.Status != job.RescalePending {
			t.Fatalf("rescale to %d workers: %+v, want a pending in-place rescale", n, r)
		}
		var ended job.RescaleInfo
		poll.Until(t, time.Minute, fmt.Sprintf("the rescale to %d workers", n), func() bool {
			for _, e := range j.Rescales() {
				if e.ID == r.ID && e.Status != job.RescalePending {
					ended = e
					return true
				}
			}
			if j.State().Terminal() {
				t.Fatalf("the job ended (%s) before the rescale to %d workers completed: raise the rows", j.State(), n)
			}
			return false
		})
		if ended.Status != job.RescaleCompleted {
			t.Fatalf("rescale to %d workers: %+v", n, ended)
		}
		for _, v := range ended.Vertices {
			if v.UID == "score/udf-0" && (v.WorkersAfter != n || v.Before != 1 || v.After != 1) {
				t.Fatalf("rescale to %d workers: vertex %+v", n, v)
			}
		}
		return ended, requested
	}

	answeredAtLeast(10, "the first worker to answer 10 batches alone")
	grown, grownAt := resize(3, func() job.RescaleInfo {
		r, err := j.Rescale(map[string]int{"score": 3})
		if err != nil {
			t.Fatal(err)
		}
		return r
	})
	if got := j.Workers("score/udf-0"); got != 3 {
		t.Fatalf("Workers = %d after growing to 3", got)
	}
	// The REST API shows the workers beside Flink's parallelism.
	var details struct {
		Vertices []struct {
			ID          string `json:"id"`
			Parallelism int    `json:"parallelism"`
			Workers     *int   `json:"flinkgo-workers"`
		} `json:"vertices"`
	}
	restCall(t, http.MethodGet, api.URL+"/jobs/"+id, "", &details)
	found := false
	for _, v := range details.Vertices {
		if v.ID == udfVertex {
			found = true
			if v.Parallelism != 1 || v.Workers == nil || *v.Workers != 3 {
				t.Fatalf("GET /jobs/:jid: the UDF vertex has parallelism %d and workers %v, want 1 and 3", v.Parallelism, v.Workers)
			}
		}
	}
	if !found {
		t.Fatalf("GET /jobs/:jid has no vertex %s: %+v", udfVertex, details)
	}
	// FLIP-291's GET has the vertex at the 3 workers a PUT asks for: a
	// client that PUTs back what it read, another vertex changed, keeps
	// them (it read the 1 subtask, and its PUT undid the resize).
	var requirements map[string]struct {
		Parallelism struct {
			UpperBound int `json:"upperBound"`
		} `json:"parallelism"`
	}
	restCall(t, http.MethodGet, api.URL+"/jobs/"+id+"/resource-requirements", "", &requirements)
	if got := requirements[udfVertex].Parallelism.UpperBound; got != 3 {
		t.Fatalf("GET resource-requirements: the UDF vertex's upperBound is %d, want its 3 workers", got)
	}
	// The pool deals batches round robin: 30 more answers are 10 from each
	// of the three workers.
	answeredAtLeast(answered()+30, "the three workers to answer 30 batches")
	shrunk, _ := resize(1, func() job.RescaleInfo {
		before := len(j.Rescales())
		body := fmt.Sprintf(`{%q: {"parallelism": {"lowerBound": 1, "upperBound": 1}}}`, udfVertex)
		restCall(t, http.MethodPut, api.URL+"/jobs/"+id+"/resource-requirements", body, nil)
		rs := j.Rescales()
		if len(rs) != before+1 {
			t.Fatalf("PUT resource-requirements made %d rescales: %+v", len(rs)-before, rs)
		}
		return rs[len(rs)-1]
	})
	// The retired workers finish their bundle, then exit: from then on
	// (causally, not by a timer) only the remaining one can answer.
	poll.Until(t, time.Minute, "the retired workers to exit", func() bool {
		if j.State().Terminal() {
			t.Fatal("the job ended before the retired workers exited: raise the rows")
		}
		return len(testkit.ChildPids()) == 1
	})
	retiredGone := float64(time.Now().UnixNano()) / 1e9
	if _, err := j.Wait(); err != nil || j.State() != job.Finished {
		t.Fatalf("the job ended %s: %v", j.State(), err)
	}
	if <-done != nil {
		t.Fatal("Execute failed")
	}
	if n := j.Attempts(); n != 1 {
		t.Fatalf("the job ran %d attempts: an in-place rescale must not restart it", n)
	}
	for _, v := range j.Vertices() {
		for _, u := range v.UDFs {
			for i, m := range u.Subtasks {
				if r := m.Restarts(); r != 0 {
					t.Errorf("%s subtask %d: %d worker restarts counted; grown and retired workers replace none", u.Op.UID, i, r)
				}
			}
		}
	}

	rows := readInPlaceRows(t, filepath.Join(dir, "out"))
	if len(rows) != inPlaceRows {
		t.Fatalf("%d rows written, want %d", len(rows), inPlaceRows)
	}
	firstAt := map[int64]float64{}
	var pids []int64
	for i, r := range rows {
		if r.id != int64(i) || r.seen != r.id {
			t.Fatalf("row %d is id %d with the result of %d: rows lost, duplicated, reordered or misjoined", i, r.id, r.seen)
		}
		if _, ok := firstAt[r.pid]; !ok {
			firstAt[r.pid] = r.at
			pids = append(pids, r.pid)
		}
		if r.at > retiredGone && r.pid != pids[0] {
			t.Fatalf("row %d was computed by worker %d after the retired workers exited; only worker %d remains", i, r.pid, pids[0])
		}
	}
	if len(pids) != 3 {
		t.Fatalf("workers seen: %v, want 3", pids)
	}
	start := float64(grownAt.UnixNano()) / 1e9
	fmt.Printf("FIGURES in-place grow 1 -> 3 workers: request to the new workers' first rows %.0f ms and %.0f ms (in-place rescale record, to the new workers' first batches: %s; shrink 3 -> 1, to the retired workers' exit: %s)\n",
		(firstAt[pids[1]]-start)*1000, (firstAt[pids[2]]-start)*1000,
		grown.EndedAt.Sub(grown.RequestedAt).Round(time.Millisecond), shrunk.EndedAt.Sub(shrunk.RequestedAt).Round(time.Millisecond))
}

// readInPlaceRows reads every CSV part file in dir, in the order of their
// first id (each part holds a run of rows in the order written).
func readInPlaceRows(t *testing.T, dir string) []inPlaceRow {
	t.Helper()
	parts, err := filepath.Glob(filepath.Join(dir, "part-*"))
	if err != nil || len(parts) == 0 {
		t.Fatalf("no part files in %s: %v", dir, err)
	}
	var runs [][]inPlaceRow
	for _, p := range parts {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		recs, err := csv.NewReader(f).ReadAll()
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		col := map[string]int{}
		for i, name := range recs[0] {
			col[name] = i
		}
		var run []inPlaceRow
		for _, rec := range recs[1:] {
			num := func(name string) int64 {
				v, err := strconv.ParseInt(rec[col[name]], 10, 64)
				if err != nil {
					t.Fatalf("%s: column %s: %v", p, name, err)
				}
				return v
			}
			at, err := strconv.ParseFloat(rec[col["at"]], 64)
			if err != nil {
				t.Fatal(err)
			}
			run = append(run, inPlaceRow{id: num("id"), seen: num("seen"), pid: num("pid"), at: at})
		}
		if len(run) > 0 {
			runs = append(runs, run)
		}
	}
	slices.SortFunc(runs, func(a, b []inPlaceRow) int { return int(a[0].id - b[0].id) })
	var rows []inPlaceRow
	for _, r := range runs {
		rows = append(rows, r...)
	}
	return rows
}

// restCall sends a request to the REST API, fails the test unless it
// answers 200, and decodes the answer into out (when not nil).
func restCall(t *testing.T, method, url, body string, out any) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json") // the REST API takes JSON bodies only
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s %s: %s: %s", method, url, resp.Status, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, url, err, data)
		}
	}
}
