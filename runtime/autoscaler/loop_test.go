package autoscaler

import (
	"errors"
	"io"
	"log/slog"
	"maps"
	"testing"
	"time"

	"github.com/flinkgo/flinkgo/runtime/config"
	"github.com/flinkgo/flinkgo/runtime/metrics"
	"github.com/flinkgo/flinkgo/runtime/plan"
)

// fakeJob is source+filter (one chain) -> udf+post (one chain, bounds 1..4)
// -> sink, whose counters the test advances as a simulated second passes:
// the source's rate is due rows per second, the filter keeps half, and a
// udf subtask takes perSubtask rows per second at full busy time.
type fakeJob struct {
	t          *testing.T
	g          *plan.Graph
	tasks      [][]*metrics.Task
	due        float64 // source rows per second
	perSubtask float64
	pending    bool
	attempts   int
	refuse     error
	asked      []map[string]int
	decisions  []Decision
	// udfs, when set, gets the udf workers' time, full busy time; the
	// udf tasks then count taskShare of it as their own busy time (a task
	// with batches in flight waits for a share of its worker's time only).
	udfs      *metrics.UDFs
	taskShare float64
}

func newFakeJob(t *testing.T, udfP int) *fakeJob {
	ops := []*plan.Operator{
		{ID: 0, UID: "src", ChainID: 0, Parallelism: 1},
		{ID: 1, UID: "src/filter", ChainID: 0, Parallelism: 1},
		{ID: 2, UID: "sel/udf-0", ChainID: 1, Parallelism: udfP, Concurrency: plan.Bounds{Min: 1, Max: 4}},
		{ID: 3, UID: "sel/post", ChainID: 1, Parallelism: udfP},
		{ID: 4, UID: "sink", ChainID: 2, Parallelism: 1},
	}
	edges := []*plan.Edge{{From: 0, To: 1}, {From: 1, To: 2}, {From: 2, To: 3}, {From: 3, To: 4}}
	g := &plan.Graph{Operators: ops, Edges: edges, MaxParallelism: 128}
	tasks := make([][]*metrics.Task, len(ops))
	for _, head := range []int{0, 2, 4} {
		for range ops[head].Parallelism {
			tasks[head] = append(tasks[head], metrics.NewTask())
		}
	}
	return &fakeJob{t: t, g: g, tasks: tasks, perSubtask: 10, taskShare: 1}
}

func (f *fakeJob) Current() (*plan.Graph, [][]*metrics.Task, *metrics.UDFs, int) {
	return f.g, f.tasks, f.udfs, f.attempts
}
func (f *fakeJob) RescalePending() bool { return f.pending }
func (f *fakeJob) Record(d Decision)    { f.decisions = append(f.decisions, d) }
func (f *fakeJob) Rescale(p map[string]int) (string, error) {
	if f.refuse != nil {
		return "", f.refuse
	}
	f.asked = append(f.asked, maps.Clone(p))
	// The job runs at the new parallelism: a new graph, new counters.
	n := newFakeJob(f.t, p["sel/udf-0"])
	f.g, f.tasks = n.g, n.tasks
	if f.udfs != nil {
		f.udfs = metrics.NewUDFs()
	}
	return "r1", nil
}

// second advances the counters by one second of the simulated job: the
// udf takes what its subtasks can, the source falls behind by the rest.
func (f *fakeJob) second() {
	udf := f.tasks[2]
	capacity := f.perSubtask * float64(len(udf))
	want := f.due / 2
	took := min(want, capacity)
	src := f.tasks[0][0]
	src.RecordsIn.Add(int64(took * 2))
	src.RecordsOut.Add(int64(took))
	if src.PendingRecords.Load() == metrics.NoPendingRecords {
		src.PendingRecords.Store(0)
	}
	src.PendingRecords.Add(int64((want - took) * 2))
	for i, t := range udf {
		t.RecordsIn.Add(int64(took / float64(len(udf))))
		busy := float64(time.Second) * took / capacity
		t.Busy.Add(int64(busy * f.taskShare))
		if f.udfs != nil {
			f.udfs.For(2, i, len(udf)).WorkerTime.Add(int64(busy))
		}
	}
}

func loopFor(f *fakeJob, clock *time.Time) *Loop {
	cfg := config.AutoscalerConfig{Target: 0.7, Boundary: 0.3, Stabilization: 2 * time.Second,
		MetricsWindow: 4 * time.Second, ScaleDownInterval: time.Hour}
	l := NewLoop(f, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	l.now = func() time.Time { return *clock }
	return l
}

// run steps the loop once per simulated second for n seconds.
func run(l *Loop, f *fakeJob, clock *time.Time, n int) {
	for range n {
		f.second()
		*clock = clock.Add(time.Second)
		l.Step()
	}
}

func TestLoopWaitsForStabilizationAndAFullWindow(t *testing.T) {
	f := newFakeJob(t, 1)
	f.due = 100 // 50 rows/s reach the udf: ideal ceil(50/7) = 8, clamped to 4
	clock := time.Unix(0, 0)
	l := loopFor(f, &clock)
	l.Step() // the job starts; its subtasks have not worked yet
	run(l, f, &clock, 6)
	if len(f.decisions) != 0 {
		t.Fatalf("decided within 1 s of start, 2 s of stabilization and 4 s of window: %+v", f.decisions)
	}
	run(l, f, &clock, 1)
	if len(f.asked) != 1 || f.asked[0]["sel/udf-0"] != 4 || f.asked[0]["sel/post"] != 4 {
		t.Fatalf("want one rescale of the udf chain to its max 4, got %+v (decisions %+v)", f.asked, f.decisions)
	}
	d := f.decisions[0]
	// The source read 20 rows/s and fell behind by 80/s: its target is 100,
	// the udf's 50; the udf took 10 rows/s at full busy time.
	if d.From != 1 || d.To != 4 || d.Rescale != "r1" || d.TargetRate != 50 || d.TrueRate != 10 || d.BusyRatio != 1 {
		t.Fatalf("decision %+v", d)
	}
}

func TestLoopReachesIdealAndHoldsOnSteadyLoad(t *testing.T) {
	f := newFakeJob(t, 1)
	f.due = 50 // 25 rows/s reach the udf: ideal ceil(25/7) = 4
	clock := time.Unix(0, 0)
	l := loopFor(f, &clock)
	l.Step()
	run(l, f, &clock, 40)
	if len(f.asked) != 1 || f.asked[0]["sel/udf-0"] != 4 {
		t.Fatalf("want one rescale to 4, got %+v", f.asked)
	}
	steady := 0
	for _, d := range f.decisions[1:] {
		if d.From != 4 || d.To != 4 {
			t.Fatalf("steady load changed parallelism: %+v", d)
		}
		steady++
	}
	if steady < 20 {
		t.Fatalf("only %d decisions over the steady phase", steady)
	}
}

func TestLoopWaitsForAPendingRescaleAndReportsARefusal(t *testing.T) {
	f := newFakeJob(t, 1)
	f.due = 100
	f.pending = true
	clock := time.Unix(0, 0)
	l := loopFor(f, &clock)
	l.Step()
	run(l, f, &clock, 10)
	if len(f.decisions) != 0 {
		t.Fatalf("decided while a rescale was pending: %+v", f.decisions)
	}
	// A restart after a failure starts the wait over: the window would
	// span it.
	f.pending, f.attempts = false, 1
	run(l, f, &clock, 6)
	if len(f.decisions) != 0 {
		t.Fatalf("decided within 2 s of stabilization and 4 s of window after a restart: %+v", f.decisions)
	}
	f.refuse = errors.New("no checkpoints")
	run(l, f, &clock, 1)
	if len(f.decisions) != 1 || f.decisions[0].Err != "rescale refused: no checkpoints" || f.decisions[0].Rescale != "" {
		t.Fatalf("decisions %+v", f.decisions)
	}
}

func TestVerticesJoinBoundsAndCountEdges(t *testing.T) {
	f := newFakeJob(t, 2)
	f.g.Operators[3].Concurrency = plan.Bounds{Min: 2, Max: 3}
	vs := Vertices(f.g, f.tasks)
	if len(vs) != 3 || vs[1].Bounds != (plan.Bounds{Min: 2, Max: 3}) || vs[1].Parallelism != 2 ||
		len(vs[1].UIDs) != 2 || vs[0].Outputs != 1 || len(vs[2].Inputs) != 1 || vs[2].Inputs[0] != 1 {
		t.Fatalf("vertices %+v", vs)
	}
}

// The source's pending records reach the UDF's decision as its backlog,
// scaled by the filter's ratio of records out to in, and over the
// catch-up duration as its catch-up rate.
func TestLoopCarriesTheSourcesBacklogDownstream(t *testing.T) {
	f := newFakeJob(t, 1)
	f.due = 100
	clock := time.Unix(0, 0)
	l := loopFor(f, &clock)
	l.cfg.CatchUpDuration = 10 * time.Second
	l.Step()
	run(l, f, &clock, 7)
	if len(f.decisions) != 1 {
		t.Fatalf("decisions %+v", f.decisions)
	}
	// 7 s of falling behind by 80 source rows a second: 560 pending, of
	// which the filter passes half to the udf.
	if d := f.decisions[0]; d.Backlog != 280 || d.CatchUpRate != 28 || d.To != 4 {
		t.Fatalf("decision %+v", d)
	}
}

func TestBacklogsFollowTheRatios(t *testing.T) {
	f := newFakeJob(t, 1)
	vs := Vertices(f.g, f.tasks)
	rates := []Rates{{In: 100, Out: 50}, {In: 50, Out: 25}, {In: 25}}
	got := Backlogs(vs, rates, []float64{1000, 0, 0})
	if got[0] != 1000 || got[1] != 500 || got[2] != 250 {
		t.Fatalf("backlogs %v, want [1000 500 250]", got)
	}
}

// The Python workers' time is the UDF vertex's busy ratio when its task
// counts less: a worker busy all the time behind a task that counts 30 %
// of it takes 10 rows/s, not 33; 15 rows/s reaching it need 3 workers.
func TestLoopTakesTheWorkersBusyTime(t *testing.T) {
	for _, workers := range []bool{false, true} {
		f := newFakeJob(t, 1)
		f.due, f.taskShare = 30, 0.3
		if workers {
			f.udfs = metrics.NewUDFs()
		}
		clock := time.Unix(0, 0)
		l := loopFor(f, &clock)
		l.Step()
		run(l, f, &clock, 7)
		if len(f.decisions) != 1 {
			t.Fatalf("workers %v: decisions %+v", workers, f.decisions)
		}
		d := f.decisions[0]
		switch {
		case !workers && (d.To != 1 || d.BusyRatio != 0.3):
			t.Fatalf("the task's busy time alone: want 1 at busy 0.3, got %+v", d)
		case workers && (d.To != 3 || d.BusyRatio != 1 || d.TrueRate != 10):
			t.Fatalf("the workers' busy time: want 1 -> 3 at busy 1, got %+v", d)
		}
	}
}
