package integration_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/flinkgo/flinkgo/integration/testkit"
	"github.com/flinkgo/flinkgo/runtime/job"
	"github.com/flinkgo/flinkgo/runtime/proto/jobpb"
	"github.com/flinkgo/flinkgo/runtime/rest"
	"github.com/flinkgo/flinkgo/runtime/server"
	"github.com/flinkgo/flinkgo/udf/bridge/pluginrunner"
)

// The UDF sleeps 20 ms a row (no CPU: the 2-core machine can run four
// workers at once), so a worker takes perWorker rows a second; at the
// target utilization 0.7 it is given 35. The datagen reads 200 rows a
// second, and the filter keeps a share of them that rises in steps with
// the row index: 20 rows/s reach the UDF (ideal parallelism 1), then 60
// (ideal 2), then 160 (ideal 5, above the bound 4).
const autoscaledPipeline = `
import os
import time
import flinkgo as fg
from flinkgo import udf

DIR = os.environ["FLINKGO_TEST_DIR"]

@udf("int64", concurrency=(1, 4), batch_size=10)
def slow(x):
    time.sleep(0.02)
    return x

env = fg.Environment(parallelism=1, config={
    "execution.checkpointing.interval": "500 ms",
    "execution.checkpointing.dir": DIR + "/chk",
    "jobmanager.adaptive-scheduler.executing.cooldown-after-rescaling": "0 ms",
    # One batch a bundle: the UDF task waits for each batch's result, so
    # its busy time is the worker's.
    "python.fn-execution.bundle.size": "10",
    "job.autoscaler.enabled": "true",
    "job.autoscaler.stabilization.interval": "2 s",
    "job.autoscaler.metrics.window": "3 s",
})
rows = env.datagen(rows_per_second=200, schema={"id": "int64"}).uid("numbers")
share = fg.when(fg.col("id") < 2400).then(2).when(fg.col("id") < 5600).then(6).otherwise(16)
steps = rows.filter(fg.col("id") % 20 < share).uid("steps")
steps.rebalance().with_column("y", slow(fg.col("id"))).uid("slow").print()
plan = env.plan("autoscaled")
`

const (
	perWorker = 50.0 // rows per second of one worker (20 ms a row)
	maxBound  = 4
)

// The step a rate of rows reaching the UDF belongs to, and its ideal
// parallelism: ceil(rate / (perWorker * 0.7)) within the bounds.
var autoscalerSteps = []struct {
	rate  float64
	ideal int
}{{20, 1}, {60, 2}, {160, 4}}

// decisionJSON is an entry of GET /jobs/:jid/autoscaler.
type decisionJSON struct {
	Timestamp   int64   `json:"timestamp"`
	UID         string  `json:"uid"`
	From        int     `json:"from"`
	To          int     `json:"to"`
	Min         int     `json:"min"`
	Max         int     `json:"max"`
	RecordsIn   float64 `json:"numRecordsInPerSecond"`
	Busy        float64 `json:"busyRatio"`
	TrueRate    float64 `json:"trueProcessingRate"`
	TargetRate  float64 `json:"targetDataRate"`
	Backlog     float64 `json:"pendingRecords"`
	CatchUpRate float64 `json:"catchUpDataRate"`
	Utilization float64 `json:"expectedUtilization"`
	Reason      string  `json:"reason"`
	Rescale     string  `json:"rescaleId"`
	Error       string  `json:"error"`
}

type autoscalerJSON struct {
	Enabled  bool `json:"enabled"`
	Vertices []struct {
		UID         string `json:"uid"`
		Parallelism int    `json:"parallelism"`
		Min         int    `json:"min"`
		Max         int    `json:"max"`
	} `json:"vertices"`
	Decisions []decisionJSON `json:"decisions"`
}

// executeStream is the server side of one Execute call, in memory.
type executeStream struct {
	grpc.ServerStream
	ctx     context.Context
	started chan string
}

func (s *executeStream) Send(ev *jobpb.JobEvent) error {
	if st := ev.GetStarted(); st != nil {
		s.started <- st.GetJobId()
	}
	return nil
}

func (s *executeStream) Context() context.Context { return s.ctx }

// stepOf is the step whose rate a decision's target rate is within a
// quarter of, -1 for none: a window spanning two steps (or a restart)
// belongs to neither.
func stepOf(target float64) int {
	for i, s := range autoscalerSteps {
		if target >= 0.75*s.rate && target <= 1.25*s.rate {
			return i
		}
	}
	return -1
}

// A job whose UDF costs a fixed time per row, its input rate raised in
// steps: the autoscaler reaches a parallelism within one of the ideal at
// each step, never leaves the bounds, and holds still over the steady
// last step. The decision log is printed (FIGURES).
// servedJob runs script's plan (testkit.JobPlan) on a server with the
// REST API, in memory, and returns the API, the server and the job's id
// once the job runs; when the test ends the job is canceled and both are
// closed.
func servedJob(t *testing.T, script string) (*httptest.Server, *server.Server, string) {
	t.Helper()
	jp := testkit.JobPlan(t, script, t.TempDir())
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	srv := server.New(job.Options{Stdout: io.Discard, SourceBatchRows: 20, Logger: logger,
		Runner: pluginrunner.Options{Python: testkit.Python(t), Logger: logger}}, nil)
	handler := rest.New(rest.Options{Server: srv})
	api := httptest.NewServer(handler)
	ctx, cancel := context.WithCancel(context.Background())
	stream := &executeStream{ctx: ctx, started: make(chan string, 1)}
	done := make(chan error, 1)
	go func() { done <- srv.Execute(&jobpb.ExecuteRequest{Plan: jp}, stream) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Execute: %v", err)
		}
		srv.Wait()
		api.Close()
		handler.Close()
	})
	var id string
	select {
	case id = <-stream.started:
	case err := <-done:
		done <- err // for the cleanup
		t.Fatalf("the job ended before it started: %v", err)
	}
	for info, _ := srv.JobInfo(id); info.Job == nil; info, _ = srv.JobInfo(id) {
		if info.State.Terminal() {
			t.Fatalf("the job failed to start: %v", info.Err)
		}
		time.Sleep(10 * time.Millisecond) // Started is sent just before the job is set
	}
	return api, srv, id
}

func TestAutoscalerFollowsSteppedInputRate(t *testing.T) {
	testkit.NoLeakedWorkers(t)
	api, srv, id := servedJob(t, autoscaledPipeline)
	read := func() autoscalerJSON {
		resp, err := http.Get(api.URL + "/jobs/" + id + "/autoscaler")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var a autoscalerJSON
		if resp.StatusCode != http.StatusOK {
			body, _ := io.ReadAll(resp.Body)
			t.Fatalf("GET autoscaler: %s: %s", resp.Status, body)
		}
		if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
			t.Fatal(err)
		}
		return a
	}
	// Wait (a guard, not a measure: the machine may be loaded) until the
	// last step has held one parallelism for six decisions in a row.
	const steadyDecisions = 6
	var a autoscalerJSON
	deadline := time.Now().Add(4 * time.Minute)
	for {
		a = read()
		if n := len(a.Decisions); n >= steadyDecisions {
			last := a.Decisions[n-steadyDecisions:]
			steady := true
			for _, d := range last {
				steady = steady && d.TrueRate > 0 && stepOf(d.TargetRate) == len(autoscalerSteps)-1 && d.From == d.To && d.From == last[0].From
			}
			if steady {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no steady phase at the last step after 4 minutes; decisions:\n%s", decisionLog(a.Decisions))
		}
		time.Sleep(500 * time.Millisecond)
	}
	fmt.Printf("FIGURES autoscaler decision log (UDF 20 ms/row, %g rows/s per worker; steps of 20, 60, 160 rows/s; bounds [1, %d]):\n%s",
		perWorker, maxBound, decisionLog(a.Decisions))

	if !a.Enabled || len(a.Vertices) != 1 || a.Vertices[0].Min != 1 || a.Vertices[0].Max != maxBound {
		t.Fatalf("autoscaled vertices %+v (enabled %v)", a.Vertices, a.Enabled)
	}
	// Every decision within the bounds, every rescale asked for done.
	lastOfStep := map[int]decisionJSON{}
	for _, d := range a.Decisions {
		if d.Error != "" || d.To < 1 || d.To > maxBound || d.Min != 1 || d.Max != maxBound {
			t.Fatalf("decision out of bounds or failed: %+v", d)
		}
		if step := stepOf(d.TargetRate); step >= 0 && d.TrueRate > 0 {
			lastOfStep[step] = d
		}
	}
	// Each step ends within one of its ideal parallelism: the last
	// decision whose window lay within the step (the machine's load may
	// make a worker slower than 50 rows/s, hence the tolerance).
	for i, s := range autoscalerSteps {
		d, ok := lastOfStep[i]
		if !ok {
			t.Fatalf("no decision within the step of %g rows/s; decisions:\n%s", s.rate, decisionLog(a.Decisions))
		}
		if d.To < s.ideal-1 || d.To > s.ideal+1 {
			t.Errorf("step %g rows/s ended at parallelism %d, the ideal is %d: %+v", s.rate, d.To, s.ideal, d)
		}
	}
	// The job runs at what the last decision chose, and every rescale it
	// went through stayed within the bounds.
	if p := a.Vertices[0].Parallelism; p != a.Decisions[len(a.Decisions)-1].To {
		t.Errorf("the vertex runs at %d, the last decision chose %d", p, a.Decisions[len(a.Decisions)-1].To)
	}
	info, _ := srv.JobInfo(id)
	for _, r := range info.Job.Rescales() {
		for _, v := range r.Vertices {
			if strings.HasPrefix(v.UID, "slow/") && (v.After < 1 || v.After > maxBound) {
				t.Errorf("rescale %s set %s to %d, outside [1, %d]", r.ID, v.UID, v.After, maxBound)
			}
		}
		fmt.Printf("FIGURES rescale %s: %s, restart %v\n", r.ID[:8], r.Status, r.Duration().Round(time.Millisecond))
	}
}

func decisionLog(ds []decisionJSON) string {
	var sb strings.Builder
	t0 := int64(0)
	if len(ds) > 0 {
		t0 = ds[0].Timestamp
	}
	for _, d := range ds {
		fmt.Fprintf(&sb, "  +%5.1fs %d -> %d  in %6.1f rows/s  busy %.2f  true %6.1f  target %6.1f  backlog %6.0f  catch-up %5.1f  util %.2f  %s%s\n",
			float64(d.Timestamp-t0)/1000, d.From, d.To, d.RecordsIn, d.Busy, d.TrueRate, d.TargetRate, d.Backlog, d.CatchUpRate, d.Utilization, d.Reason,
			map[bool]string{true: "  rescale " + d.Rescale, false: ""}[d.Rescale != ""])
	}
	return sb.String()
}
