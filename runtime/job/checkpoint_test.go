package job

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/internal/arrowipc"
	"github.com/flinkgo/flinkgo/internal/poll"
	"github.com/flinkgo/flinkgo/runtime/config"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
)

// datagenToCSV plans datagen(rows, rowsPerSecond) → CSV files in out, the
// source at parallelism p and the sink at q, with the given config.
func datagenToCSV(t *testing.T, rows int64, rowsPerSecond float64, p, q int, out string, config map[string]string) *plan.Graph {
	t.Helper()
	schema, err := arrowipc.EncodeSchema(arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil))
	if err != nil {
		t.Fatal(err)
	}
	src := &planpb.Node{Id: 1, Uid: "numbers", Name: "datagen", OutputSchema: schema, Parallelism: int32(p),
		Kind: &planpb.Node_Source{Source: &planpb.Source{Kind: &planpb.Source_Datagen{Datagen: &planpb.DatagenSource{
			Rows: rows, RowsPerSecond: rowsPerSecond,
		}}}}}
	sink := &planpb.Node{Id: 2, Uid: "files", Name: "write_csv", OutputSchema: schema, Parallelism: int32(q),
		Inputs: []*planpb.Input{{Node: 1, Partitioning: &planpb.Partitioning{Kind: planpb.Partitioning_REBALANCE}}},
		Kind: &planpb.Node_Sink{Sink: &planpb.Sink{Kind: &planpb.Sink_File{File: &planpb.FileSink{
			Format: planpb.FileSource_CSV, Path: out,
		}}}}}
	g, err := plan.PlanWire(&planpb.JobPlan{Name: "checkpointed", Config: config, Nodes: []*planpb.Node{src, sink}}, plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// publishedRows reads the rows (without headers) of every published CSV
// part file in dir.
func publishedRows(t *testing.T, dir string) [][]string {
	t.Helper()
	parts, err := filepath.Glob(filepath.Join(dir, "part-*"))
	if err != nil {
		t.Fatal(err)
	}
	var rows [][]string
	for _, p := range parts {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		records, err := csv.NewReader(f).ReadAll()
		f.Close()
		if err != nil || len(records) == 0 {
			t.Fatalf("%s: %v (%d records, want a header at least)", p, err, len(records))
		}
		rows = append(rows, records[1:]...)
	}
	return rows
}

// committedIDs reads the ids (first column) of every published part file
// in dir, sorted.
func committedIDs(t *testing.T, dir string) []int64 {
	t.Helper()
	var ids []int64
	for _, r := range publishedRows(t, dir) {
		id, err := strconv.ParseInt(r[0], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// wantExactly checks that ids are 0..n-1, each once.
func wantExactly(t *testing.T, ids []int64, n int64) {
	t.Helper()
	for i, id := range ids {
		if id != int64(i) {
			t.Fatalf("committed rows are not 0..%d once each: at %d found %d (%d rows)", n-1, i, id, len(ids))
		}
	}
	if int64(len(ids)) != n {
		t.Fatalf("%d rows committed, want %d", len(ids), n)
	}
}

// waitForCheckpoints waits until j completed n checkpoints.
func waitForCheckpoints(t *testing.T, j *Job, n int) {
	t.Helper()
	completed := func() bool {
		done := 0
		for _, c := range j.Checkpoints() {
			if c.Status == "completed" && !c.Savepoint {
				done++
			} else if c.Status == "failed" {
				t.Fatalf("checkpoint %d failed: %v", c.ID, c.Err)
			}
		}
		return done >= n
	}
	if !poll.Within(30*time.Second, completed) { // hang guard
		t.Fatalf("no %d checkpoints completed: %+v", n, j.Checkpoints())
	}
}

// completedCheckpoints counts j's completed checkpoints (not savepoints).
func completedCheckpoints(j *Job) int {
	n := 0
	for _, c := range j.Checkpoints() {
		if c.Status == "completed" && !c.Savepoint {
			n++
		}
	}
	return n
}

// restoreFromSavepoint waits for two checkpoints of j, stops it with a
// savepoint, and runs the graph restored builds (cfg then names the
// savepoint as the restore path) to its end.
func restoreFromSavepoint(t *testing.T, j *Job, cfg map[string]string, mem memory.Allocator, restored func() *plan.Graph) {
	t.Helper()
	waitForCheckpoints(t, j, 2)
	sp, err := j.StopWithSavepoint(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Wait(); err != nil {
		t.Fatal(err)
	}
	cfg[config.ConfigRestorePath] = sp
	j2, err := Start(context.Background(), restored(), Options{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j2.Wait(); err != nil {
		t.Fatal(err)
	}
}

func checkpointConfig(dir string, extra ...string) map[string]string {
	c := map[string]string{
		config.ConfigCheckpointInterval:  "100 ms",
		config.ConfigCheckpointDir:       dir,
		config.ConfigCheckpointsRetained: "2",
	}
	for i := 0; i+1 < len(extra); i += 2 {
		c[extra[i]] = extra[i+1]
	}
	return c
}

func TestCheckpointedJobCommitsEveryRowOnceAndCleansUp(t *testing.T) {
	dir, out := t.TempDir(), t.TempDir()
	const rows = 20000
	g := datagenToCSV(t, rows, 10000, 2, 2, out, checkpointConfig(dir))
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	j, err := Start(context.Background(), g, Options{Allocator: mem, SourceBatchRows: 500})
	if err != nil {
		t.Fatal(err)
	}
	waitForCheckpoints(t, j, 2)
	if _, err := j.Wait(); err != nil {
		t.Fatal(err)
	}
	wantExactly(t, committedIDs(t, out), rows)
	if _, err := os.Stat(filepath.Join(dir, j.ID())); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a finished job's checkpoints are deleted; stat: %v", err)
	}
	if hidden, _ := filepath.Glob(filepath.Join(out, ".*")); len(hidden) > 0 {
		t.Errorf("left hidden files %v", hidden)
	}
}

// cancelAfterCheckpoints runs datagenToCSV(rows) at parallelism 2 with
// cfg (retaining 2 checkpoints on cancel), cancels it after 3 checkpoints
// with some rows committed, and returns its latest checkpoint's directory.
func cancelAfterCheckpoints(t *testing.T, rows int64, out string, cfg map[string]string, mem memory.Allocator) string {
	t.Helper()
	ctx, cancel := context.WithCancelCause(context.Background())
	j, err := Start(ctx, datagenToCSV(t, rows, 10000, 2, 2, out, cfg), Options{Allocator: mem, SourceBatchRows: 500})
	if err != nil {
		t.Fatal(err)
	}
	waitForCheckpoints(t, j, 3)
	cancel(errors.New("test cancels"))
	if _, err := j.Wait(); err == nil {
		t.Fatal("canceled job returned no error")
	}
	if j.State() != Canceled {
		t.Fatalf("state %s", j.State())
	}
	if cfg[config.ConfigUnalignedCheckpoints] == "true" {
		for _, c := range j.Checkpoints() {
			if c.Status == "completed" && !c.Unaligned {
				t.Errorf("checkpoint %d is not marked unaligned", c.ID)
			}
		}
	}
	chks, _ := filepath.Glob(filepath.Join(cfg[config.ConfigCheckpointDir], j.ID(), "chk-*", "_metadata"))
	if len(chks) != 2 {
		t.Fatalf("retained %v, want 2 checkpoints", chks)
	}
	slices.Sort(chks)
	if before := committedIDs(t, out); len(before) == 0 || int64(len(before)) >= rows {
		t.Fatalf("%d rows committed before the cancel; the test needs some, not all", len(before))
	}
	return filepath.Dir(chks[len(chks)-1])
}

// Cancel with retained checkpoints, then restore the latest at other
// parallelisms: the committed rows of both runs are every row exactly once.
func TestRestoreFromRetainedCheckpointAtAnotherParallelism(t *testing.T) {
	for _, tc := range []struct{ p, q int }{{3, 1}, {1, 3}} {
		t.Run(fmt.Sprintf("source %d sink %d", tc.p, tc.q), func(t *testing.T) {
			dir, out := t.TempDir(), t.TempDir()
			const rows = 30000
			cfg := checkpointConfig(dir, config.ConfigCheckpointRetention, config.RetainOnCancellation)
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			latest := cancelAfterCheckpoints(t, rows, out, cfg, mem)
			cfg[config.ConfigRestorePath] = latest
			j2, err := Start(context.Background(), datagenToCSV(t, rows, 10000, tc.p, tc.q, out, cfg), Options{Allocator: mem, SourceBatchRows: 500})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := j2.Wait(); err != nil {
				t.Fatal(err)
			}
			wantExactly(t, committedIDs(t, out), rows)
		})
	}
}

func TestStopWithSavepointThenRestoreFromIt(t *testing.T) {
	dir, out, savepoints := t.TempDir(), t.TempDir(), t.TempDir()
	const rows = 30000
	cfg := checkpointConfig(dir, config.ConfigSavepointDir, savepoints)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	j, err := Start(context.Background(), datagenToCSV(t, rows, 10000, 2, 2, out, cfg), Options{Allocator: mem, SourceBatchRows: 500})
	if err != nil {
		t.Fatal(err)
	}
	waitForCheckpoints(t, j, 1)
	running, err := j.TriggerSavepoint(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(running, "_metadata")); err != nil || filepath.Dir(running) != savepoints {
		t.Fatalf("savepoint at %s: %v", running, err)
	}
	stopped, err := j.StopWithSavepoint(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Wait(); err != nil || j.State() != Finished {
		t.Fatalf("a job stopped with a savepoint ends FINISHED, got %s: %v", j.State(), err)
	}
	before := committedIDs(t, out)
	if len(before) == 0 || len(before) >= rows {
		t.Fatalf("%d rows committed at the stop; the test needs some, not all", len(before))
	}
	// A savepoint is self-contained: move it, then restore at parallelism 1.
	moved := filepath.Join(t.TempDir(), "moved")
	if err := os.Rename(stopped, moved); err != nil {
		t.Fatal(err)
	}
	cfg[config.ConfigRestorePath] = moved
	j2, err := Start(context.Background(), datagenToCSV(t, rows, 0, 1, 1, out, cfg), Options{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j2.Wait(); err != nil {
		t.Fatal(err)
	}
	wantExactly(t, committedIDs(t, out), rows)
}

func TestRestoreWithAnOperatorRemoved(t *testing.T) {
	dir, out, savepoints := t.TempDir(), t.TempDir(), t.TempDir()
	cfg := checkpointConfig(dir, config.ConfigSavepointDir, savepoints)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	j, err := Start(context.Background(), datagenToCSV(t, 0, 10000, 1, 1, out, cfg), Options{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	sp, err := j.StopWithSavepoint(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Wait(); err != nil {
		t.Fatal(err)
	}
	// The same job with the sink's uid changed: the savepoint's state of
	// uid "files" has no operator any more.
	g := datagenToCSV(t, 1000, 0, 1, 1, t.TempDir(), map[string]string{config.ConfigRestorePath: sp})
	g.Operators[1].UID = "other-files"
	_, err = Start(context.Background(), g, Options{Allocator: mem})
	if err == nil || !strings.Contains(err.Error(), `operator uid "files"`) || !strings.Contains(err.Error(), config.ConfigIgnoreUnclaimedState) {
		t.Fatalf("want an error naming the unclaimed uid and the option, got %v", err)
	}
	g.Config[config.ConfigIgnoreUnclaimedState] = "true"
	j2, err := Start(context.Background(), g, Options{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j2.Wait(); err != nil {
		t.Fatal(err)
	}
}

func TestCheckpointStorageProblems(t *testing.T) {
	file := filepath.Join(t.TempDir(), "not-a-dir")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(file, "checkpoints")
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)

	// Created at job start: the job does not start.
	_, err := Start(context.Background(), datagenToCSV(t, 0, 1000, 1, 1, t.TempDir(), checkpointConfig(bad)), Options{Allocator: mem})
	if err == nil || !strings.Contains(err.Error(), file) {
		t.Fatalf("want a start error naming %s, got %v", file, err)
	}

	// Created on the first checkpoint: the job starts, that checkpoint
	// fails naming the path, and with no tolerable failure the job fails.
	cfg := checkpointConfig(bad, config.ConfigCreateDirsOnCheckpoint, "true", config.ConfigRestartStrategy, "none")
	j, err := Start(context.Background(), datagenToCSV(t, 0, 1000, 1, 1, t.TempDir(), cfg), Options{Allocator: mem})
	if err != nil {
		t.Fatalf("the job must start: %v", err)
	}
	_, err = j.Wait()
	if err == nil || !strings.Contains(err.Error(), file) || !errors.Is(err, ErrCheckpointDeclined) {
		t.Fatalf("want the job to fail with the storage error, got %v", err)
	}
	stats := j.Checkpoints()
	if len(stats) != 1 || stats[0].Status != "failed" || !strings.Contains(stats[0].Err.Error(), "not a directory") {
		t.Fatalf("want one failed checkpoint with the cause, got %+v", stats)
	}

	// Tolerated failures: the job keeps running and fails only after more.
	cfg[config.ConfigTolerableFailures] = "2"
	j, err = Start(context.Background(), datagenToCSV(t, 0, 1000, 1, 1, t.TempDir(), cfg), Options{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	if _, err = j.Wait(); err == nil || len(j.Checkpoints()) != 3 {
		t.Fatalf("want the job to fail at the third failed checkpoint, got %v after %+v", err, j.Checkpoints())
	}
}

// A checkpoint on demand, and the max parallelism a snapshot fixes.
func TestCheckpointOnDemandAndRestoredMaxParallelism(t *testing.T) {
	dir, out := t.TempDir(), t.TempDir()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	// No interval: checkpoints only on demand.
	cfg := map[string]string{config.ConfigCheckpointDir: dir, config.ConfigCheckpointRetention: config.RetainOnCancellation}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	j, err := Start(ctx, keyedSums(t, 0, 5000, 2, out, cfg), Options{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	chk, err := j.TriggerCheckpoint(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(chk) != "chk-1" || filepath.Dir(chk) != filepath.Join(dir, j.ID()) {
		t.Fatalf("checkpoint at %s", chk)
	}
	cancel()
	_, _ = j.Wait()

	// The snapshot's max parallelism (128) is the job's: 200 subtasks of
	// the aggregation are refused, naming the operator and both numbers.
	job := &plan.JobPlan{Name: "too wide", DefaultParallelism: 200, Config: map[string]string{config.ConfigRestorePath: chk}}
	for _, op := range keyedSums(t, 0, 5000, 2, out, nil).Operators {
		job.Nodes = append(job.Nodes, op.Node)
	}
	opts, err := PlanOptions(job)
	if err != nil || opts.RestoredMaxParallelism != 128 {
		t.Fatalf("plan options %+v, %v", opts, err)
	}
	_, err = plan.Plan(job, opts)
	if err == nil || !strings.Contains(err.Error(), "parallelism 200") || !strings.Contains(err.Error(), "max parallelism 128") ||
		!strings.Contains(err.Error(), "agg") {
		t.Fatalf("want the §4.6 error, got %v", err)
	}
}

// Checkpoints that expire before every task acknowledged them fail, and a
// job that tolerates that runs on: the late barriers pass through without
// a snapshot, and the output is still every row once.
func TestExpiredCheckpointsAreToleratedAndTheirBarriersPass(t *testing.T) {
	dir, out := t.TempDir(), t.TempDir()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	const rows = 10000
	cfg := checkpointConfig(dir, config.ConfigCheckpointTimeout, "1 ms", config.ConfigTolerableFailures, "1000")
	j, err := Start(context.Background(), keyedSums(t, rows, 10000, 2, out, cfg), Options{Allocator: mem, SourceBatchRows: 500})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Wait(); err != nil {
		t.Fatal(err)
	}
	failed := 0
	for _, c := range j.Checkpoints() {
		if c.Status == "failed" && strings.Contains(c.Err.Error(), "expired") {
			failed++
		}
	}
	if failed == 0 {
		t.Fatalf("no checkpoint expired: %+v", j.Checkpoints())
	}
	wantKeyedResults(t, rows, keyedResults(t, out))
}

// A file sink that finished before another task failed publishes nothing
// until the job's end: the restart replays its rows once, not twice.
func TestSinksThatFinishedBeforeARestartPublishOnce(t *testing.T) {
	out := t.TempDir()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema, err := arrowipc.EncodeSchema(arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil))
	if err != nil {
		t.Fatal(err)
	}
	datagen := func(id int32, uid string, rows int64, rate float64) *planpb.Node {
		return &planpb.Node{Id: id, Uid: uid, Name: uid, OutputSchema: schema, Kind: &planpb.Node_Source{Source: &planpb.Source{
			Kind: &planpb.Source_Datagen{Datagen: &planpb.DatagenSource{Rows: rows, RowsPerSecond: rate}}}}}
	}
	nodes := []*planpb.Node{
		datagen(1, "quick", 1000, 0),
		{Id: 2, Uid: "files", Name: "write_csv", OutputSchema: schema, Inputs: []*planpb.Input{{Node: 1}},
			Kind: &planpb.Node_Sink{Sink: &planpb.Sink{Kind: &planpb.Sink_File{File: &planpb.FileSink{Format: planpb.FileSource_CSV, Path: out}}}}},
		datagen(3, "slow", 2000, 4000),
		{Id: 4, Uid: "collect", Name: "collect", OutputSchema: schema, Inputs: []*planpb.Input{{Node: 3}},
			Kind: &planpb.Node_Sink{Sink: &planpb.Sink{Kind: &planpb.Sink_Collect{Collect: &planpb.CollectSink{}}}}},
	}
	g, err := plan.PlanWire(&planpb.JobPlan{Name: "two", DefaultParallelism: 2, Nodes: nodes, Config: map[string]string{
		config.ConfigRestartStrategy: "fixed-delay", config.ConfigFixedDelayAttempts: "1", config.ConfigFixedDelay: "10 ms",
	}}, plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var failed atomic.Bool
	j, err := Start(context.Background(), g, Options{Allocator: mem, SourceBatchRows: 100, Collect: func(_ *plan.Operator, _ int, b arrow.RecordBatch) error {
		b.Release()
		// The first attempt fails once the quick sink is surely done.
		if !failed.Load() && len(committedOrHidden(t, out)) > 0 {
			failed.Store(true)
			return errors.New("injected failure")
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Wait(); err != nil {
		t.Fatal(err)
	}
	if j.Attempts() != 2 || !failed.Load() {
		t.Fatalf("%d attempts; want a restart after the injected failure", j.Attempts())
	}
	wantExactly(t, committedIDs(t, out), 1000)
}

// committedOrHidden lists every file in dir.
func committedOrHidden(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func columnExpr(name string) *planpb.Expr {
	return &planpb.Expr{Kind: &planpb.Expr_Column{Column: name}}
}
