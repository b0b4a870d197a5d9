package integration_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/integration/testkit"
	"github.com/flinkgo/flinkgo/internal/poll"
	"github.com/flinkgo/flinkgo/runtime/checkpoint"
	"github.com/flinkgo/flinkgo/runtime/config"
	"github.com/flinkgo/flinkgo/runtime/job"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
)

// backpressuredJob plans a fast datagen of `rows` ids rebalanced into a
// slow pandas UDF (costMs per row, parallelism 2), an
// exactly-once CSV sink of (id, y = 2 id), and per-key sums in Pebble
// into another: a backlog of batches waits in the UDF's inboxes.
func backpressuredJob(t testing.TB, dir string, rows int, costMs float64, unaligned bool, interval string) *plan.Graph {
	t.Helper()
	g, err := plan.PlanWire(backpressuredPlan(t, dir, rows, costMs, unaligned, interval), plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// backpressuredPlan is backpressuredJob's plan, before planning.
func backpressuredPlan(t testing.TB, dir string, rows int, costMs float64, unaligned bool, interval string) *planpb.JobPlan {
	t.Helper()
	return testkit.JobPlan(t, fmt.Sprintf(`
import os, time
import flinkgo as fg
from flinkgo import udf

DIR = os.environ["FLINKGO_TEST_DIR"]
env = fg.Environment(parallelism=2, config={
    "execution.checkpointing.interval": %[4]q,
    "execution.checkpointing.dir": os.path.join(DIR, "checkpoints"),
    "execution.checkpointing.num-retained": "10",
    "execution.checkpointing.unaligned.enabled": %[3]q,
    "execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION",
    "restart-strategy.type": "fixed-delay",
    "restart-strategy.fixed-delay.attempts": "100",
    "restart-strategy.fixed-delay.delay": "50 ms",
})

@udf("int64", func_type="pandas")
def slow_double(x):
    time.sleep(%[2]g / 1000 * len(x))
    return x * 2

rows = env.datagen(rows=%[1]d, schema={"id": "int64"}).set_parallelism(1)
doubled = rows.rebalance().with_column("y", slow_double(fg.col("id")))
doubled.write_csv(os.path.join(DIR, "out"))
keyed = doubled.with_column("k", fg.col("id") %% 10).key_by("k").agg(fg.sum("y").alias("total"), fg.count().alias("n"))
keyed.write_csv(os.path.join(DIR, "sums"))
plan = env.plan("backpressured")
`, rows, costMs, strconv.FormatBool(unaligned), interval), dir)
}

// backpressuredOptions runs backpressuredJob in batches and bundles of 200
// rows: a batch costs the UDF 200 times its cost per row.
func backpressuredOptions(t *testing.T, mem memory.Allocator) job.Options {
	opts := runOptions(t, mem)
	opts.SourceBatchRows, opts.BundleSize = 200, 200
	return opts
}

// waitForChannelState waits for a completed checkpoint after `after`
// whose channel state is not empty, and returns it.
func waitForChannelState(t *testing.T, j *job.Job, after int64) job.CheckpointStats {
	t.Helper()
	var found job.CheckpointStats
	withChannelState := func() bool {
		for _, c := range j.Checkpoints() {
			if c.ID > after && c.Status == "completed" && c.PersistedData > 0 {
				found = c
				return true
			}
		}
		select {
		case <-j.Done():
			t.Fatalf("the job ended before a checkpoint with channel state completed: %+v", j.Checkpoints())
		default:
		}
		return false
	}
	if !poll.Within(2*time.Minute, withChannelState) {
		t.Fatalf("no checkpoint with channel state completed: %+v", j.Checkpoints())
	}
	return found
}

// Under backpressure (a fast source, a slow UDF), an unaligned checkpoint
// completes while batches are still queued before the UDF: its barrier
// overtook them, and they are in the checkpoint as channel state, Arrow
// IPC files that _metadata references from the UDF's subtask state.
func TestUnalignedCheckpointCompletesUnderBackpressure(t *testing.T) {
	testkit.NoLeakedWorkers(t)
	dir := t.TempDir()
	g := backpressuredJob(t, dir, 10_000_000, 1, true, "300 ms") // canceled long before its end
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	j, err := job.Start(ctx, g, backpressuredOptions(t, mem))
	if err != nil {
		t.Fatal(err)
	}
	c := waitForChannelState(t, j, 0)
	backlog := backlogBytes(j)
	cancel()
	if _, err := j.Wait(); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled job returned %v", err)
	}
	if !c.Unaligned {
		t.Errorf("checkpoint %d is not marked unaligned", c.ID)
	}
	m, base, err := checkpoint.LoadMetadata(c.Path)
	if err != nil {
		t.Fatal(err)
	}
	op, ok := m.ChannelStateOf()
	if !ok {
		t.Fatalf("checkpoint %d: stats say %d bytes of channel state, _metadata has none", c.ID, c.PersistedData)
	}
	var batches int
	var rows int64
	for _, st := range op.Subtasks {
		if st.Inputs == nil {
			continue
		}
		for _, cs := range st.Inputs.Channels {
			got, err := checkpoint.ReadChannel(context.Background(), filepath.Dir(base), cs, mem)
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range got {
				rows += b.NumRows()
				b.Release()
			}
			batches += len(got)
		}
	}
	if batches == 0 || rows == 0 {
		t.Fatalf("checkpoint %d's channel state of %q reads back empty", c.ID, op.Name)
	}
	// Restoring it with the UDF at parallelism 3 is refused, clearly.
	jp := backpressuredPlan(t, dir, 10_000_000, 1, true, "300 ms")
	jp.Config[config.ConfigRestorePath] = c.Path
	jp.DefaultParallelism = 3 // the UDF and everything after it
	rescaled, err := plan.PlanWire(jp, plan.Options{RestoredMaxParallelism: m.MaxParallelism})
	if err != nil {
		t.Fatal(err)
	}
	// Hang guard: an accepted restore would run the 10 million rows.
	runCtx, stop := context.WithTimeout(context.Background(), time.Minute)
	defer stop()
	_, err = job.Run(runCtx, rescaled, backpressuredOptions(t, mem))
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("checkpoint %d is unaligned", c.ID)) || !strings.Contains(err.Error(), "savepoint") {
		t.Errorf("a restore of checkpoint %d at another parallelism returned %v, want the refusal naming it", c.ID, err)
	} else {
		t.Logf("refused: %v", err)
	}
	t.Logf("checkpoint %d of %q: %d batches (%d rows, %d bytes) in flight stored as channel state, in %s; %d checkpoints, queued input %v",
		c.ID, op.Name, batches, rows, c.PersistedData, c.Duration.Round(time.Millisecond), len(j.Checkpoints()), backlog)
}

// backlogBytes lists the bytes queued before each subtask of each vertex.
func backlogBytes(j *job.Job) [][]int64 {
	var out [][]int64
	for _, v := range j.Vertices() {
		var subtasks []int64
		for _, tm := range v.Tasks {
			subtasks = append(subtasks, tm.InputQueueBytes.Load())
		}
		out = append(out, subtasks)
	}
	return out
}

// restoreLog records the job's "restoring" log lines: which checkpoint
// each attempt restored, and its channel state.
type restoreLog struct {
	mu       sync.Mutex
	restores []string
	replayed int // restores with channel state
}

func (l *restoreLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *restoreLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *restoreLog) WithGroup(string) slog.Handler            { return l }
func (l *restoreLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "restoring" {
		return nil
	}
	var line string
	r.Attrs(func(a slog.Attr) bool {
		line += " " + a.String()
		if a.Key == "channel_state_bytes" && a.Value.Int64() > 0 {
			l.mu.Lock()
			l.replayed++
			l.mu.Unlock()
		}
		return true
	})
	l.mu.Lock()
	l.restores = append(l.restores, line)
	l.mu.Unlock()
	return nil
}

// checkDoubledExactlyOnce checks the committed output of backpressuredJob
// against an uninterrupted run's: every id of 0..rows-1 once with y = 2 id,
// and the per-key sums.
func checkDoubledExactlyOnce(t *testing.T, dir string, rows int) {
	t.Helper()
	ids := doubledIDs(t, filepath.Join(dir, "out"))
	for i, id := range ids {
		if id != int64(i) {
			t.Fatalf("committed rows are not every id once: at %d found %d (%d rows, want %d)", i, id, len(ids), rows)
		}
	}
	if len(ids) != rows {
		t.Fatalf("%d rows committed, want %d", len(ids), rows)
	}
	checkKeyedSums(t, filepath.Join(dir, "sums"), rows)
}

// doubledIDs reads the (id, y) rows committed in dir, checks y = 2 id in
// each, and returns the ids, sorted.
func doubledIDs(t *testing.T, dir string) []int64 {
	t.Helper()
	var ids []int64
	for _, r := range csvPartRows(t, dir) {
		id, _ := strconv.ParseInt(r[0], 10, 64)
		y, _ := strconv.ParseInt(r[1], 10, 64)
		if y != 2*id {
			t.Fatalf("row %v: y != 2 id", r)
		}
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// checkKeyedSums checks the per-key sums that the keyed aggregation of
// the exactly-once tests' jobs committed in dir: for k in 0..9, the sum of
// 2 id over the ids of 0..rows-1 with id % 10 == k, and their count.
func checkKeyedSums(t *testing.T, dir string, rows int) {
	t.Helper()
	sums := map[string]string{}
	for _, r := range csvPartRows(t, dir) {
		if _, dup := sums[r[0]]; dup {
			t.Fatalf("key %s emitted twice", r[0])
		}
		sums[r[0]] = r[1] + " " + r[2]
	}
	for k := int64(0); k < 10; k++ {
		var total, n int64
		for id := k; id < int64(rows); id += 10 {
			total += 2 * id
			n++
		}
		if got, want := sums[strconv.FormatInt(k, 10)], fmt.Sprintf("%d %d", total, n); got != want {
			t.Errorf("key %d: got %q, want %q", k, got, want)
		}
	}
}
