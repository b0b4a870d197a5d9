package integration_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/chromedp/chromedp"

	"github.com/flinkgo/flinkgo/integration/testkit"
	"github.com/flinkgo/flinkgo/runtime/proto/jobpb"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
	"github.com/flinkgo/flinkgo/runtime/rest"
	"github.com/flinkgo/flinkgo/runtime/server"
)

// DashboardScreenshotEnv, when set, names a file the dashboard test also
// writes its screenshot to (docs/dashboard.png is made so).
const DashboardScreenshotEnv = "FLINKGO_DASHBOARD_SCREENSHOT"

// The running job's name has markup in it: the page must show it as text.
const dashboardJobName = `enrich <b id="injected">sensors</b>`

// TestDashboardInChromium loads the dashboard in a real headless Chromium
// against a running job with a Python UDF: the jobs list, open before the
// job starts, shows it by its refresh; the job's graph renders every vertex
// with its parallelism and non-zero rates; its checkpoints are listed; a
// savepoint is triggered and the UDF's vertex rescaled from the page (its
// worker pool grows 2 -> 3 in place, its subtasks stay), after which a
// click on it lists its two subtasks and the rescale history shows the
// rescale (2 -> 3 workers, in place, completed, as /rescales/history has
// it); the cancel button cancels the job (the browser runs as the
// server's user, whom the REST API admits over loopback without a token),
// and the list shows it canceled. An autoscaled job's page shows
// the autoscaler's decisions as GET /jobs/:jid/autoscaler has them. A failed
// job's page shows the Python traceback.
func TestDashboardInChromium(t *testing.T) {
	testkit.NoLeakedWorkers(t) // the browser too: it is a child process
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	testkit.Chromium(t)
	opts := runOptions(t, mem)
	opts.Stdout = io.Discard // the autoscaled job prints
	jobs := server.New(opts, nil)
	client := serveJobs(t, jobs)
	ep := rest.NewEndpoints(jobs, nil)
	if err := ep.Start(rest.Listen{RESTPort: 0, PromPort: -1}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ep.Close)
	restAddr, _ := ep.Addresses()
	base := "http://" + restAddr

	// A job that fails in its UDF, run to its end.
	failedID, fin := runToEnd(t, client, testkit.JobPlan(t, failingPipeline, t.TempDir()))
	if fin.GetState() != jobpb.JobFinished_FAILED {
		t.Fatalf("the failing job ended %v", fin)
	}

	ctx := testkit.Browser(t, 1360, 1000)
	step := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		c, cancel := context.WithTimeout(ctx, 90*time.Second)
		defer cancel()
		if err := chromedp.Do(c, actions...); err != nil {
			// What the page showed, to tell why.
			var shown string
			if text, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`)); err == nil {
				shown = text
			}
			if png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)); err == nil {
				_ = os.WriteFile(filepath.Join(t.ArtifactDir(), "failed.png"), png, 0o644)
			}
			t.Fatalf("%s: %v; the page showed:\n%s", what, err, shown)
		}
	}
	eval := func(expr string, out any) {
		t.Helper()
		raw, err := chromedp.Run(ctx, chromedp.Evaluate[[]byte](expr))
		if err != nil {
			t.Fatalf("evaluating %s: %v", expr, err)
		}
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("evaluating %s: %s: %v", expr, raw, err)
		}
	}
	failedRow := `#jobs tr[data-jid="` + failedID + `"]`
	step("the jobs list shows the failed job",
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(chromedp.CSS(failedRow+` .state[data-state="FAILED"]`)))

	// A job that runs until canceled: datagen at a bounded rate into a
	// pandas UDF at parallelism 2, checkpointing twice a second.
	dir := t.TempDir()
	running := testkit.JobPlan(t, pipelinePrelude+`
import time

@udf("float64", func_type="pandas")
def doubled(x):
    time.sleep(0.005)
    return x * 2

env.datagen(schema={"x": "float64"}, rows_per_second=400).with_column(
    "y", doubled(fg.col("x"))).set_parallelism(2).write_csv(OUT)
plan = env.plan(`+strconv.Quote(dashboardJobName)+`)
`, dir)
	running.Config = map[string]string{
		"execution.checkpointing.interval": "500 ms", "execution.checkpointing.dir": filepath.Join(dir, "chk"),
		"execution.checkpointing.savepoint-dir": filepath.Join(dir, "sp"),
		// The rescale below may apply at once (the default waits 30 s after the start).
		"jobmanager.adaptive-scheduler.executing.cooldown-after-rescaling": "0 ms",
	}
	jid, ended := startJob(t, jobs, client, running)

	var details struct {
		Vertices []struct {
			ID          string `json:"id"`
			Name        string `json:"name"`
			Parallelism int    `json:"parallelism"`
			Workers     int    `json:"flinkgo-workers"`
		} `json:"vertices"`
	}
	// The job's tasks exist once it is deployed, a moment after it started.
	for deadline := time.Now().Add(60 * time.Second); len(details.Vertices) == 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the running job has no vertices after a minute")
		}
		getJSON(t, base+"/jobs/"+jid, &details)
	}
	if len(details.Vertices) < 2 {
		t.Fatalf("want at least 2 vertices (the datagen and the UDF at another parallelism), got %+v", details.Vertices)
	}

	// The list open since before the job started shows it by its refresh,
	// the name as text.
	row := `#jobs tr[data-jid="` + jid + `"]`
	step("the jobs list shows the new job", chromedp.WaitVisible(chromedp.CSS(row)))
	var listed struct {
		Name     string `json:"name"`
		State    string `json:"state"`
		Injected bool   `json:"injected"`
	}
	eval(`({name: document.querySelector('`+row+` a').textContent,
		state: document.querySelector('`+row+` .state').dataset.state,
		injected: document.getElementById("injected") !== null})`, &listed)
	if listed.Name != dashboardJobName || listed.State != "RUNNING" || listed.Injected {
		t.Fatalf("jobs list: want %q RUNNING shown as text, got %+v", dashboardJobName, listed)
	}

	// The job's page: every vertex of /jobs/:jid in the graph, each with
	// its parallelism, and rates that the running job makes non-zero.
	step("the job's graph renders its vertices with rates",
		chromedp.Click(chromedp.CSS(row+" a")),
		chromedp.WaitVisible(chromedp.CSS("#graph g.vertex")),
		chromedp.Poll[chromedp.Void](`(() => {
			const vs = [...document.querySelectorAll("#graph g.vertex")];
			return vs.length === `+strconv.Itoa(len(details.Vertices))+` &&
				vs.every((g) => +g.dataset.inRate > 0 || +g.dataset.outRate > 0) &&
				vs.some((g) => +g.dataset.inRate > 0);
		})()`, chromedp.WithPollingInterval(200*time.Millisecond), chromedp.WithPollingTimeout(60*time.Second)))
	var drawn []struct {
		ID          string  `json:"id"`
		Parallelism string  `json:"parallelism"`
		InRate      float64 `json:"inRate"`
		OutRate     float64 `json:"outRate"`
		Busy        float64 `json:"busy"`
		Text        string  `json:"text"`
	}
	eval(`[...document.querySelectorAll("#graph g.vertex")].map((g) => ({id: g.dataset.vertex,
		parallelism: g.dataset.parallelism, inRate: +g.dataset.inRate, outRate: +g.dataset.outRate,
		busy: +g.dataset.busy, text: g.textContent}))`, &drawn)
	for i, v := range details.Vertices {
		d := drawn[i]
		if d.ID != v.ID || d.Parallelism != strconv.Itoa(v.Parallelism) || !strings.Contains(d.Text, "parallelism "+strconv.Itoa(v.Parallelism)) {
			t.Errorf("vertex %d: REST has %+v, the graph shows %+v", i, v, d)
		}
		if !strings.Contains(d.Text, "in ") || !strings.Contains(d.Text, "/s") || !strings.Contains(d.Text, "busy ") {
			t.Errorf("vertex %d: no rates in %q", i, d.Text)
		}
	}
	t.Logf("vertices drawn: %+v", drawn)

	// Checkpoints complete and are listed with their sizes.
	step("the checkpoints are listed",
		chromedp.Poll[chromedp.Void](`document.querySelectorAll("#checkpoint-history tr[data-checkpoint]").length >= 2`,
			chromedp.WithPollingInterval(200*time.Millisecond), chromedp.WithPollingTimeout(60*time.Second)))

	// The charts: each vertex's records in per second, as the server
	// sampled them, and the completed checkpoints' durations and sizes;
	// each chart's last point is a point of the REST API's.
	step("the charts draw the vertices' rates and the checkpoints",
		chromedp.Poll[chromedp.Void](`(() => {
			const c = window.flinkgoCharts;
			return c["records-in"] !== undefined && c["records-in"].series.length === `+strconv.Itoa(len(details.Vertices))+` &&
				c["records-in"].series.every((s) => s.points.length >= 2 && s.points[s.points.length - 1][1] > 0) &&
				c["checkpoint-duration"].series[0].points.length >= 1 &&
				document.querySelectorAll("#charts figure.chart path.series").length > 0;
		})()`, chromedp.WithPollingInterval(200*time.Millisecond), chromedp.WithPollingTimeout(60*time.Second)))
	if problem := chartsAgainstREST(t, eval, base, jid, false); problem != "" {
		t.Error(problem)
	}

	// A savepoint from the page: the browser is the server's user, so no
	// token is asked (the REST API checks its loopback socket's owner).
	spDir := filepath.Join(t.TempDir(), "savepoint")
	step("the savepoint button writes a savepoint",
		chromedp.SendKeys(chromedp.CSS("#savepoint-dir"), spDir),
		chromedp.Click(chromedp.CSS("#savepoint")),
		chromedp.Poll[chromedp.Void](`document.getElementById("action-message").textContent.startsWith("Savepoint written to ")`,
			chromedp.WithPollingTimeout(60*time.Second)))
	var message string
	eval(`document.getElementById("action-message").textContent`, &message)
	if !strings.Contains(message, spDir) {
		t.Errorf("savepoint message %q does not name %s", message, spDir)
	}
	if entries, err := os.ReadDir(spDir); err != nil || len(entries) == 0 {
		t.Errorf("no savepoint under %s: %v %v", spDir, entries, err)
	}

	// Rescale the UDF's vertex to 3 from the page: a vertex of stateless UDFs
	// keeps its 2 subtasks and grows its worker pool to 3 workers without a
	// restart, and the graph shows them.
	udf := details.Vertices[1]
	if udf.Parallelism != 2 {
		t.Fatalf("the UDF vertex runs at %d, want 2", udf.Parallelism)
	}
	step("the rescale button rescales the UDF's vertex",
		chromedp.SetValue(chromedp.CSS("#rescale-vertex"), udf.ID),
		chromedp.SendKeys(chromedp.CSS("#rescale-parallelism"), "3"),
		chromedp.Click(chromedp.CSS("#rescale")),
		chromedp.Poll[chromedp.Void](`document.getElementById("action-message").textContent.startsWith("Rescale to parallelism 3 requested")`,
			chromedp.WithPollingTimeout(30*time.Second)),
		chromedp.Poll[chromedp.Void](`(() => {
			const g = document.querySelector('#graph g.vertex[data-vertex="`+udf.ID+`"]');
			return g !== null && g.dataset.parallelism === "2" && g.dataset.workers === "3" && +g.dataset.inRate > 0;
		})()`, chromedp.WithPollingInterval(200*time.Millisecond), chromedp.WithPollingTimeout(90*time.Second)))
	getJSON(t, base+"/jobs/"+jid, &details)
	if details.Vertices[1].Parallelism != 2 || details.Vertices[1].Workers != 3 {
		t.Errorf("after the page's rescale REST has %+v", details.Vertices)
	}

	// A click on the vertex lists its two subtasks, each with its ratios.
	step("a click on the UDF's vertex lists its subtasks",
		chromedp.Click(chromedp.CSS(`#graph g.vertex[data-vertex="`+udf.ID+`"] rect`)),
		chromedp.Poll[chromedp.Void](`(() => {
			const rows = [...document.querySelectorAll('#subtask-table[data-vertex="`+udf.ID+`"] tbody tr')];
			return rows.length === 2 && rows.every((r) => /%/.test(r.lastElementChild.textContent));
		})()`, chromedp.WithPollingTimeout(30*time.Second)))
	// The rescale history shows the page's rescale: in place, completed,
	// the UDF's vertex 2 -> 3 workers, as /rescales/history has it; the job
	// has no autoscaler, and the page says so.
	step("the rescale history shows the rescale",
		chromedp.Poll[chromedp.Void](`(() => {
			const rows = [...document.querySelectorAll('#rescale-history tr[data-rescale]')];
			return rows.length === 1 && rows[0].dataset.state === "COMPLETED" &&
				document.querySelector('#rescale-counts [data-count="completed"] strong').textContent === "1";
		})()`, chromedp.WithPollingInterval(200*time.Millisecond), chromedp.WithPollingTimeout(30*time.Second)))
	var history []struct {
		ID string `json:"rescaleUuid"`
	}
	getJSON(t, base+"/jobs/"+jid+"/rescales/history", &history)
	var shown struct {
		ID, Change, Cause, Text string
		Off                     bool
	}
	eval(`(() => {
		const r = document.querySelector('#rescale-history tr[data-rescale]');
		return {ID: r.dataset.rescale, Change: r.querySelector("td.change").textContent, Cause: r.children[1].textContent,
			Text: r.textContent, Off: document.getElementById("autoscaler-off") !== null};
	})()`, &shown)
	if len(history) != 1 || shown.ID != history[0].ID || shown.Change != udf.Name+": 2 → 3 workers" ||
		shown.Cause != "UPDATE_REQUIREMENT, at IN_PLACE" || !strings.Contains(shown.Text, "SUCCEEDED") || !shown.Off {
		t.Errorf("the page shows rescale %+v; REST's history %+v", shown, history)
	}

	// The screenshot, while the job runs at its new parallelism.
	png := screenshot(ctx, t, "dashboard.png")
	if p := os.Getenv(DashboardScreenshotEnv); p != "" {
		if err := os.WriteFile(p, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	var blocked []string
	eval(`window.flinkgoPolicyViolations`, &blocked)
	if len(blocked) > 0 {
		t.Errorf("the Content-Security-Policy blocked parts of the page: %v", blocked)
	}
	// And the browser enforces it: code from a string (what an injected
	// script would be) is refused, and the page says so.
	step("the browser enforces the Content-Security-Policy",
		chromedp.Evaluate[chromedp.Void](`setTimeout("window.injectedRan = true", 0)`),
		chromedp.Poll[chromedp.Void](`window.flinkgoPolicyViolations.length > 0 &&
			document.getElementById("refreshed").textContent.startsWith("Blocked by the Content-Security-Policy")`,
			chromedp.WithPollingTimeout(10*time.Second)))
	var ran bool
	eval(`window.injectedRan === true`, &ran)
	if ran {
		t.Error("code from a string ran despite the Content-Security-Policy")
	}
	var cpConfig string
	eval(`document.getElementById("checkpoint-config").textContent`, &cpConfig)
	if !strings.HasPrefix(cpConfig, "Every 500 ms") || !strings.Contains(cpConfig, ", aligned, exactly-once;") {
		t.Errorf("the checkpoint configuration shown: %q", cpConfig)
	}

	// Cancel: the page shows CANCELED.
	step("the cancel button cancels the job",
		chromedp.Click(chromedp.CSS("#cancel-job")),
		chromedp.Click(chromedp.CSS("#cancel-confirm")),
		chromedp.Poll[chromedp.Void](`document.getElementById("job-state").textContent === "CANCELED"`,
			chromedp.WithPollingTimeout(60*time.Second)))
	select {
	case f := <-ended:
		if f.GetState() != jobpb.JobFinished_CANCELED {
			t.Fatalf("the job ended %v, want CANCELED", f)
		}
		ended <- f // for the deferred wait
	case <-time.After(60 * time.Second):
		t.Fatal("the job did not end after the page canceled it")
	}
	// The job ended: its history no longer grows, and each chart's last
	// point is the REST API's last.
	var lastProblem string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if lastProblem = chartsAgainstREST(t, eval, base, jid, true); lastProblem == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("after the job's end: %s", lastProblem)
			break
		}
	}
	step("the jobs list shows the job canceled",
		chromedp.Click(chromedp.CSS(`header nav a[href="#/"]`)),
		chromedp.WaitVisible(chromedp.CSS(row+` .state[data-state="CANCELED"]`)))
	var status struct {
		Status string `json:"status"`
	}
	getJSON(t, base+"/jobs/"+jid+"/status", &status)
	if status.Status != "CANCELED" {
		t.Errorf("REST status after the page's cancel: %q", status.Status)
	}

	// An autoscaled job's page (TestAutoscalerFollowsSteppedInputRate's
	// job) shows the autoscaler's settings and its decisions, each as GET
	// /jobs/:jid/autoscaler has it.
	scaled := testkit.JobPlan(t, autoscaledPipeline, t.TempDir()) // its UDF's bounds are [1, 4]
	scaledID, scaledEnded := startJob(t, jobs, client, scaled)
	step("the autoscaled job shows its decisions",
		chromedp.Navigate(base+"/#/jobs/"+scaledID),
		chromedp.WaitVisible(chromedp.CSS("#autoscaler-config")),
		chromedp.Poll[chromedp.Void](`document.querySelectorAll("#autoscaler-decisions tr[data-decision]").length >= 1`,
			chromedp.WithPollingInterval(200*time.Millisecond), chromedp.WithPollingTimeout(90*time.Second)))
	var rows []struct {
		At       string `json:"at"`
		From, To string
		Text     string
	}
	eval(`[...document.querySelectorAll("#autoscaler-decisions tr[data-decision]")].map((r) => ({
		at: r.dataset.decision, From: r.dataset.from, To: r.dataset.to, Text: r.textContent}))`, &rows)
	var scaler autoscalerJSON // read after the page: it has every decision shown
	getJSON(t, base+"/jobs/"+scaledID+"/autoscaler", &scaler)
	byTime := map[string]decisionJSON{}
	for _, d := range scaler.Decisions {
		byTime[strconv.FormatInt(d.Timestamp, 10)] = d
	}
	for _, r := range rows {
		d, ok := byTime[r.At]
		if !ok || r.From != strconv.Itoa(d.From) || r.To != strconv.Itoa(d.To) || !strings.Contains(r.Text, d.Reason) ||
			d.To < d.Min || d.To > d.Max {
			t.Errorf("the page shows decision %+v; REST has %+v", r, d)
		}
	}
	var scalerConfig string
	eval(`document.getElementById("autoscaler-config").textContent`, &scalerConfig)
	if len(scaler.Vertices) != 1 || !strings.HasPrefix(scalerConfig, "Target utilization 70% ± 30%, metrics window 3.0 s") ||
		!strings.Contains(scalerConfig, fmt.Sprintf("Scales slow [%d, %d]", scaler.Vertices[0].Min, scaler.Vertices[0].Max)) {
		t.Errorf("the autoscaler's settings shown: %q", scalerConfig)
	}
	t.Logf("autoscaler decisions shown: %+v", rows)
	screenshot(ctx, t, "autoscaled-job.png")
	if _, err := jobs.Cancel(context.Background(), &jobpb.CancelRequest{JobId: scaledID}); err != nil {
		t.Fatal(err)
	}
	if f := <-scaledEnded; f.GetState() != jobpb.JobFinished_CANCELED {
		t.Errorf("the autoscaled job ended %v, want CANCELED", f)
	}
	scaledEnded <- nil // for the cleanup's wait

	// The failed job's page shows the Python traceback.
	step("the failed job shows its traceback",
		chromedp.Navigate(base+"/#/jobs/"+failedID),
		chromedp.WaitVisible(chromedp.CSS("#exceptions pre.stacktrace")))
	var trace string
	eval(`document.querySelector("#exceptions pre.stacktrace").textContent`, &trace)
	for _, want := range []string{"ZeroDivisionError", "Traceback", "return 1 / 0", "broken"} {
		if !strings.Contains(trace, want) {
			t.Errorf("the exception shown lacks %q:\n%s", want, trace)
		}
	}
	// One folded entry per failure of the history, the newest unfolded.
	var exc struct {
		History struct {
			Entries []struct {
				Name string `json:"exceptionName"`
			} `json:"entries"`
		} `json:"exceptionHistory"`
	}
	getJSON(t, base+"/jobs/"+failedID+"/exceptions", &exc)
	var folded struct {
		Count int
		Open  string
	}
	eval(`({Count: document.querySelectorAll("#exceptions details.exception").length,
		Open: document.querySelector("#exceptions details.exception[open] > summary").textContent})`, &folded)
	if len(exc.History.Entries) == 0 || folded.Count != len(exc.History.Entries) || !strings.HasPrefix(folded.Open, exc.History.Entries[0].Name) {
		t.Errorf("the page shows %+v; REST has %+v", folded, exc.History.Entries)
	}
	screenshot(ctx, t, "failed-job.png")
}

// chartsAgainstREST compares the last point of each chart of the job's
// page with the REST API: each vertex's records in per second, busy time
// and watermark lag with GET /jobs/:jid/metrics-history at the same time
// (its last point when final), and the checkpoint charts with the
// checkpoint of GET /jobs/:jid/checkpoints's history of the same id (the
// latest completed when final). It returns what differs, "" when nothing.
func chartsAgainstREST(t *testing.T, eval func(string, any), base, jid string, final bool) string {
	t.Helper()
	type series struct {
		ID     string        `json:"id"`
		Points [][2]*float64 `json:"points"`
		IDs    []int64       `json:"ids"`
	}
	var charts map[string]struct {
		Series []series `json:"series"`
	}
	eval(`window.flinkgoCharts`, &charts)
	var history struct {
		Vertices []map[string]json.RawMessage `json:"vertices"`
	}
	getJSON(t, base+"/jobs/"+jid+"/metrics-history", &history)
	for chart, column := range map[string]string{"records-in": "numRecordsInPerSecond", "busy": "busyTimeMsPerSecond", "watermark-lag": "watermarkLag"} {
		for _, s := range charts[chart].Series {
			if len(s.Points) == 0 {
				return fmt.Sprintf("chart %s: vertex %s has no point", chart, s.ID)
			}
			last := s.Points[len(s.Points)-1]
			var at []float64
			var values []*float64
			for _, v := range history.Vertices {
				var id string
				_ = json.Unmarshal(v["id"], &id)
				if id == s.ID {
					_ = json.Unmarshal(v["timestamps"], &at)
					_ = json.Unmarshal(v[column], &values)
				}
			}
			i := slices.Index(at, *last[0])
			switch {
			case i < 0:
				return fmt.Sprintf("chart %s: vertex %s's last point at %v is not in REST's history %v", chart, s.ID, *last[0], at)
			case final && i != len(at)-1:
				return fmt.Sprintf("chart %s: vertex %s's last point at %v; REST's last is at %v", chart, s.ID, *last[0], at[len(at)-1])
			case (last[1] == nil) != (values[i] == nil) || last[1] != nil && *last[1] != *values[i]:
				return fmt.Sprintf("chart %s: vertex %s at %v: the page has %v, REST %v", chart, s.ID, *last[0], deref(last[1]), deref(values[i]))
			}
		}
	}
	var cps struct {
		Latest struct {
			Completed *checkpointJSON `json:"completed"`
		} `json:"latest"`
		History []checkpointJSON `json:"history"`
	}
	getJSON(t, base+"/jobs/"+jid+"/checkpoints", &cps)
	for chart, field := range map[string]func(checkpointJSON) float64{
		"checkpoint-duration": func(c checkpointJSON) float64 { return c.Duration },
		"checkpoint-size":     func(c checkpointJSON) float64 { return c.Size },
	} {
		s := charts[chart].Series[0]
		if len(s.Points) == 0 || len(s.IDs) != len(s.Points) {
			return fmt.Sprintf("chart %s: points %v of checkpoints %v", chart, s.Points, s.IDs)
		}
		id, last := s.IDs[len(s.IDs)-1], s.Points[len(s.Points)-1]
		i := slices.IndexFunc(cps.History, func(c checkpointJSON) bool { return c.ID == id })
		switch {
		case i < 0:
			return fmt.Sprintf("chart %s: checkpoint %d is not in REST's history", chart, id)
		case final && (cps.Latest.Completed == nil || cps.Latest.Completed.ID != id):
			return fmt.Sprintf("chart %s: the last point is checkpoint %d; REST's latest completed is %+v", chart, id, cps.Latest.Completed)
		case *last[0] != cps.History[i].Acked || *last[1] != field(cps.History[i]):
			return fmt.Sprintf("chart %s: checkpoint %d at (%v, %v); REST has %+v", chart, id, *last[0], *last[1], cps.History[i])
		}
	}
	return ""
}

// checkpointJSON is a checkpoint of GET /jobs/:jid/checkpoints.
type checkpointJSON struct {
	ID       int64   `json:"id"`
	Acked    float64 `json:"latest_ack_timestamp"`
	Duration float64 `json:"end_to_end_duration"`
	Size     float64 `json:"state_size"`
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// screenshot saves the page as a PNG test artifact (go test -artifacts)
// and returns it.
func screenshot(ctx context.Context, t *testing.T, name string) []byte {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.ArtifactDir(), name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
	return png
}

// startJob starts jp on the server and returns its id and a channel that
// gets its final event once its stream ends; the job is canceled and
// awaited at the test's end if it still runs.
func startJob(t *testing.T, jobs *server.Server, client jobpb.JobServiceClient, jp *planpb.JobPlan) (string, chan *jobpb.JobFinished) {
	t.Helper()
	stream, err := client.Execute(context.Background(), &jobpb.ExecuteRequest{Plan: jp})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := stream.Recv()
	if err != nil || ev.GetStarted() == nil {
		t.Fatalf("job %q did not start: %v %v", jp.GetName(), ev, err)
	}
	jid := ev.GetStarted().GetJobId()
	ended := make(chan *jobpb.JobFinished, 1)
	go func() { // the job's events until its stream ends
		var fin *jobpb.JobFinished
		for {
			ev, err := stream.Recv()
			if err != nil {
				ended <- fin
				return
			}
			if f := ev.GetFinished(); f != nil {
				fin = f
			}
		}
	}()
	t.Cleanup(func() { // the job ends even when the test fails before its cancel
		_, _ = jobs.Cancel(context.Background(), &jobpb.CancelRequest{JobId: jid})
		ended <- <-ended // for a later reader too
	})
	return jid, ended
}

// runToEnd runs jp on the server and returns its id and final event.
func runToEnd(t *testing.T, client jobpb.JobServiceClient, jp *planpb.JobPlan) (string, *jobpb.JobFinished) {
	t.Helper()
	stream, err := client.Execute(context.Background(), &jobpb.ExecuteRequest{Plan: jp})
	if err != nil {
		t.Fatal(err)
	}
	evs := events(t, stream)
	return evs[0].GetStarted().GetJobId(), evs[len(evs)-1].GetFinished()
}

func getJSON(t *testing.T, url string, out any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}
