package job

import (
	"context"
	"errors"
	"maps"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/runtime/config"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
)

// replanner returns the Options.Replan of the plan g came from (nodes
// that map to one operator each), as the server builds it from the
// client's plan.
func replanner(g *plan.Graph) func(map[string]int) (*plan.Graph, error) {
	var nodes []*planpb.Node
	for _, op := range g.Operators {
		nodes = append(nodes, op.Node)
	}
	jp := &planpb.JobPlan{Name: g.Name, DefaultParallelism: int32(g.DefaultParallelism), Config: g.Config, Nodes: nodes}
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
