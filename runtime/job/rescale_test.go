package job

import (
	"context"
	"errors"
	"maps"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/internal/poll"
	"github.com/flinkgo/flinkgo/runtime/config"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/udf/bridge/bridgetest"
	"github.com/flinkgo/flinkgo/udf/bridge/bridgetest/goworker"
)

// replanner returns the Options.Replan of the plan g came from (nodes
// that map to one operator each), as the server builds it from the
// client's plan.
func replanner(g *plan.Graph) func(map[string]int) (*plan.Graph, error) {
	var nodes []*plan.Node
	for _, op := range g.Operators {
		nodes = append(nodes, op.Node)
	}
	jp := &plan.JobPlan{Name: g.Name, DefaultParallelism: g.DefaultParallelism, Config: g.Config, Nodes: nodes}
	return func(p map[string]int) (*plan.Graph, error) {
		return plan.Plan(jp, plan.Options{Parallelism: p, RestoredMaxParallelism: g.MaxParallelism})
	}
}

// waitForRescale waits until rescale id ended and returns it.
func waitForRescale(t *testing.T, j *Job, id string) RescaleInfo {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second) // hang guard
	for time.Now().Before(deadline) {
		for _, r := range j.Rescales() {
			if r.ID == id && r.Status != RescalePending {
				return r
			}
		}
		select {
		case <-j.Done():
			_, err := j.Wait()
			t.Fatalf("the job ended before rescale %s: %v; rescales %+v", id, err, j.Rescales())
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("rescale %s did not end: %+v", id, j.Rescales())
	return RescaleInfo{}
}

// A keyed aggregation rescaled in place 2 → 4 → 1 while running gives the
// results of an uninterrupted run, each key once (exactly-once sink), and
// restarts from the checkpoint that triggered each rescale. With unaligned
// checkpoints, that checkpoint holds no channel state (which cannot be
// rescaled: checkpoints are aligned while a rescale is pending).
func TestRescaleInPlace(t *testing.T) {
	for _, unaligned := range []bool{false, true} {
		t.Run(map[bool]string{false: "aligned", true: "unaligned"}[unaligned], func(t *testing.T) { rescaleInPlace(t, unaligned) })
	}
}

func rescaleInPlace(t *testing.T, unaligned bool) {
	const rows = 40000
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	dir, out := t.TempDir(), t.TempDir()
	cfg := checkpointConfig(dir, config.ConfigRescaleCooldown, "0 ms", config.ConfigUnalignedCheckpoints, strconv.FormatBool(unaligned))
	g := keyedSums(t, rows, 8000, 2, out, cfg)
	j, err := Start(context.Background(), g, Options{Allocator: mem, SourceBatchRows: 500, KeyedCacheGroups: 4, Replan: replanner(g)})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []int{4, 1} {
		waitForCheckpoints(t, j, 1)
		r, err := j.Rescale(map[string]int{"numbers": p, "keyed": p, "sums": p})
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != RescalePending {
			t.Fatalf("rescale to %d: %+v, want pending", p, r)
		}
		done := waitForRescale(t, j, r.ID)
		if done.Status != RescaleCompleted || done.Trigger != TriggerCompletedCheckpoint || done.CheckpointID == 0 {
			t.Fatalf("rescale to %d: %+v", p, done)
		}
		for _, c := range j.Checkpoints() {
			if c.ID == done.CheckpointID && c.PersistedData > 0 {
				t.Fatalf("rescale to %d restarted from checkpoint %+v, which holds channel state", p, c)
			}
		}
		for _, v := range done.Vertices {
			if v.UID != "files" && v.After != p {
				t.Errorf("rescale to %d: vertex %+v", p, v)
			}
		}
		if got := j.Parallelism()["sums"]; got != p {
			t.Fatalf("sums runs at %d after the rescale to %d", got, p)
		}
		for _, op := range j.CurrentGraph().Operators {
			if op.UID == "sums" && (op.Parallelism != p || op.ParallelismFrom != plan.FromRescale) {
				t.Fatalf("the current graph has sums at %d (%s)", op.Parallelism, op.ParallelismFrom)
			}
		}
		// The REST API's vertices follow: one metrics entry per new subtask.
		for _, v := range j.Vertices() {
			if len(v.Tasks) != v.Head.Parallelism {
				t.Fatalf("vertex %s has %d task metrics at parallelism %d", v.Head.UID, len(v.Tasks), v.Head.Parallelism)
			}
		}
		t.Logf("rescale to %d: %s from request to running (restart %s), from checkpoint %d",
			p, done.EndedAt.Sub(done.RequestedAt).Round(time.Millisecond), done.Duration().Round(time.Millisecond), done.CheckpointID)
	}
	if _, err := j.Wait(); err != nil {
		t.Fatal(err)
	}
	if rs := j.Rescales(); len(rs) != 2 {
		t.Fatalf("history %+v, want 2 rescales", rs)
	}
	wantKeyedResults(t, rows, keyedResults(t, out))
	// A rescale is no failure: the restart strategy was not consulted.
	for _, c := range j.History() {
		if c.State == Failing || c.State == Failed {
			t.Fatalf("history %v", j.History())
		}
	}
}

// After max-checkpoint-failures failed checkpoints a pending rescale
// happens from the latest completed checkpoint; within the cooldown it
// waits.
func TestRescaleTriggers(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	dir, out := t.TempDir(), t.TempDir()
	cfg := checkpointConfig(dir, config.ConfigRescaleCooldown, "1 h")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g := keyedSums(t, 1<<40, 2000, 2, out, cfg)
	j, err := Start(ctx, g, Options{Allocator: mem, SourceBatchRows: 100, Replan: replanner(g)})
	if err != nil {
		t.Fatal(err)
	}
	r, err := j.Rescale(map[string]int{"sums": 3})
	if err != nil {
		t.Fatal(err)
	}
	waitForCheckpoints(t, j, 3)
	if rs := j.Rescales(); len(rs) != 1 || rs[0].Status != RescalePending {
		t.Fatalf("within the cooldown: %+v, want the rescale pending", rs)
	}
	// A second request replaces the first.
	r2, err := j.Rescale(map[string]int{"keyed": 3})
	if err != nil {
		t.Fatal(err)
	}
	rs := j.Rescales()
	if len(rs) != 2 || rs[0].ID != r.ID || rs[0].Status != RescaleIgnored || rs[1].ID != r2.ID {
		t.Fatalf("after a second request: %+v", rs)
	}
	if want := map[string]int{"numbers": 2, "keyed": 3, "sums": 3, "files": 2}; !maps.Equal(afterOf(rs[1]), want) {
		t.Fatalf("the second request keeps the first's parallelism: %v, want %v", afterOf(rs[1]), want)
	}
	cancel()
	if _, err := j.Wait(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait: %v", err)
	}
	rs = j.Rescales()
	if last := rs[len(rs)-1]; last.Status != RescaleIgnored || !strings.Contains(last.Reason, "ended") {
		t.Fatalf("pending rescale of an ended job: %+v", last)
	}
}

func afterOf(r RescaleInfo) map[string]int {
	m := map[string]int{}
	for _, v := range r.Vertices {
		m[v.UID] = v.After
	}
	return m
}

func TestRescaleRefusals(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := t.TempDir()
	cfg := checkpointConfig(dir, plan.ConfigMaxParallelism, "4")
	g := keyedSums(t, 1<<40, 1000, 2, t.TempDir(), cfg)
	j, err := Start(ctx, g, Options{Allocator: mem, SourceBatchRows: 100, Replan: replanner(g)})
	if err != nil {
		t.Fatal(err)
	}
	noCheckpoints := keyedSums(t, 1<<40, 1000, 2, t.TempDir(), nil)
	j2, err := Start(ctx, noCheckpoints, Options{Allocator: mem, SourceBatchRows: 100, Replan: replanner(noCheckpoints)})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		job  *Job
		ask  map[string]int
		want []string
	}{
		{"unknown uid", j, map[string]int{"summs": 2}, []string{`no operator or node has the uid "summs"`, `"sums"`, `"numbers"`, `"files"`}},
		{"above the max parallelism", j, map[string]int{"sums": 5}, []string{`uid "sums": parallelism 5 is above the job's max parallelism 4`, "at most 4"}},
		{"not positive", j, map[string]int{"sums": 0}, []string{`uid "sums" is 0`}},
		{"no checkpointing", j2, map[string]int{"sums": 3}, []string{"does not checkpoint", config.ConfigCheckpointInterval, "savepoint"}},
	} {
		_, err := tc.job.Rescale(tc.ask)
		if !errors.Is(err, ErrRescaleRefused) {
			t.Fatalf("%s: %v, want ErrRescaleRefused", tc.name, err)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q lacks %q", tc.name, err, w)
			}
		}
	}
	if rs := j.Rescales(); len(rs) != 0 {
		t.Fatalf("refused requests in the history: %+v", rs)
	}
	// Asking for the current parallelism changes nothing.
	if r, err := j.Rescale(map[string]int{"sums": 2}); err != nil || r.Status != RescaleIgnored {
		t.Fatalf("no-op request: %+v, %v", r, err)
	}
	cancel()
	_, _ = j.Wait()
	_, _ = j2.Wait()
}

// A pending rescale happens after max-checkpoint-failures checkpoints
// failed in a row, from the latest completed checkpoint. The failures are
// fed to the job's trigger as its coordinator reports them.
func TestRescaleAfterCheckpointFailures(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	dir, out := t.TempDir(), t.TempDir()
	cfg := checkpointConfig(dir, config.ConfigRescaleCooldown, "0 ms", config.ConfigCheckpointInterval, "1 h",
		config.ConfigRescaleMaxCheckpointFailures, "2")
	const rows = 20000
	g := keyedSums(t, rows, 4000, 2, out, cfg)
	j, err := Start(context.Background(), g, Options{Allocator: mem, SourceBatchRows: 200, Replan: replanner(g)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.TriggerCheckpoint(context.Background()); err != nil {
		t.Fatal(err)
	}
	r, err := j.Rescale(map[string]int{"sums": 3})
	if err != nil {
		t.Fatal(err)
	}
	j.mu.Lock()
	a := j.mu.attempt
	j.mu.Unlock()
	failed := CheckpointStats{ID: 100, Status: "failed", Err: errors.New("injected")}
	j.onCheckpointForRescale(a, failed)
	if rs := j.Rescales(); rs[0].Status != RescalePending {
		t.Fatalf("after one failure: %+v, want pending", rs)
	}
	j.onCheckpointForRescale(a, failed)
	done := waitForRescale(t, j, r.ID)
	if done.Status != RescaleCompleted || done.Trigger != TriggerCheckpointFailures || done.CheckpointID != 1 {
		t.Fatalf("%+v", done)
	}
	if _, err := j.Wait(); err != nil {
		t.Fatal(err)
	}
	wantKeyedResults(t, rows, keyedResults(t, out))
}

// A stateless UDF operator resized 1 → 3 → 1 workers while the job runs
// (fake runners, no Python): no checkpointing needed, no restart, every row
// once in order with its own result; a keyed or source uid in a job
// without checkpoints is still refused, and asking for the workers it runs
// changes nothing.
func TestRescaleStatelessUDFInPlace(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	made := make(chan *bridgetest.Runner, 16)
	var mu sync.Mutex
	var got [][2]int64
	var madeSoFar []*bridgetest.Runner // under mu
	remember := func(r *bridgetest.Runner) {
		mu.Lock()
		defer mu.Unlock()
		madeSoFar = append(madeSoFar, r)
	}
	collect := func(_ *plan.Operator, _ int, b arrow.RecordBatch) error {
		defer b.Release()
		ids, ys := b.Column(0).(*array.Int64), b.Column(1).(*array.Int64)
		mu.Lock()
		defer mu.Unlock()
		for i := range int(b.NumRows()) {
			got = append(got, [2]int64{ids.Value(i), ys.Value(i)})
		}
		return nil
	}
	const rows = 6000
	g := affineJob(t, goworker.UDF("affine", goworker.Affine, arrow.PrimitiveTypes.Int64), rows, 3000, 1)
	j, err := Start(context.Background(), g, Options{Allocator: mem, SourceBatchRows: 50, Collect: collect,
		NewRunner: fakeAffine(made, remember), BundleSize: 200})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Rescale(map[string]int{"numbers": 2}); !errors.Is(err, ErrRescaleRefused) {
		t.Fatalf("rescaling the source of a job without checkpoints: %v, want refused", err)
	}
	udf := ""
	for _, op := range g.Operators {
		if op.Kind == plan.KindUDF {
			udf = op.UID
		}
	}
	for _, n := range []int{3, 1} {
		r, err := j.Rescale(map[string]int{"scored": n})
		if err != nil {
			t.Fatal(err)
		}
		if r.Mode != ModeInPlace || r.Status != RescalePending {
			t.Fatalf("rescale to %d workers: %+v", n, r)
		}
		done := waitForRescale(t, j, r.ID)
		if done.Status != RescaleCompleted || done.Trigger != TriggerInPlace {
			t.Fatalf("rescale to %d workers: %+v", n, done)
		}
		for _, v := range done.Vertices {
			if v.UID == udf && (v.Before != 1 || v.After != 1 || v.WorkersAfter != n) {
				t.Fatalf("rescale to %d workers: vertex %+v", n, v)
			}
		}
		if w := j.Workers(udf); w != n {
			t.Fatalf("Workers = %d after the rescale to %d", w, n)
		}
		if n == 3 {
			poll.Until(t, time.Minute, "each of the three workers to take a batch", func() bool {
				if j.State().Terminal() {
					t.Fatal("the job ended before the three workers took batches: raise the rows")
				}
				mu.Lock()
				defer mu.Unlock()
				took := 0
				for _, r := range madeSoFar {
					if len(r.ProcessedRows()) > 0 {
						took++
					}
				}
				return took >= 3
			})
		}
	}
	same, err := j.Rescale(map[string]int{"scored": 1})
	if err != nil || same.Status != RescaleIgnored || same.Mode != ModeInPlace {
		t.Fatalf("asking for the workers it runs: %+v, %v", same, err)
	}
	if _, err := j.Wait(); err != nil {
		t.Fatal(err)
	}
	if j.Attempts() != 1 {
		t.Fatalf("%d attempts: an in-place rescale must not restart the job", j.Attempts())
	}
	if len(got) != rows {
		t.Fatalf("%d rows, want %d", len(got), rows)
	}
	for i, r := range got {
		if r != [2]int64{int64(i), 2*int64(i) + 1} {
			t.Fatalf("row %d is %v: rows lost, duplicated, reordered or misjoined", i, r)
		}
	}
	close(made)
	var runners []*bridgetest.Runner
	for r := range made {
		runners = append(runners, r)
	}
	if len(runners) != 3 {
		for i, r := range runners {
			t.Logf("worker %d: %d batches, calls %v", i, len(r.ProcessedRows()), r.Log().Snapshot()[:min(5, len(r.Log().Snapshot()))])
		}
		t.Fatalf("%d workers made, want 3", len(runners))
	}
	for i, r := range runners {
		if len(r.ProcessedRows()) == 0 {
			t.Errorf("worker %d took no batch", i)
		}
		if r.Log().Count("runner.Close") != 1 || r.Log().Count("runner.Cancel") != 0 {
			t.Errorf("worker %d: calls %v, want one Close and no Cancel", i, r.Log().Snapshot())
		}
	}
}
