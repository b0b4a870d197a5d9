package integration_test

import (
	"context"
	"encoding/csv"
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/integration/testkit"
	"github.com/flinkgo/flinkgo/internal/poll"
	"github.com/flinkgo/flinkgo/runtime/job"
	"github.com/flinkgo/flinkgo/runtime/plan"
)

// failoverFaults is how many faults the failover test injects: 6, or
// 2 per chaos round when $FLINKGO_CHAOS_ROUNDS asks for more than 3 (`make
// chaos`); 10 000 rows per fault go through the job (at 8 000 rows/s), so
// the faults come while they flow.
func failoverFaults(t *testing.T) (faults, rows int) {
	faults = max(6, 2*chaosRounds(t))
	return faults, 10000 * faults
}

// A checkpointed job with a Python UDF, a keyed aggregation and
// exactly-once file sinks survives worker processes killed with SIGKILL and tasks failing, at
// random moments, restarting from its latest checkpoint each time: the
// committed output is exactly that of a run without failures.
func TestFailoverKeepsFileSinkExactlyOnce(t *testing.T) {
	testkit.NoLeakedWorkers(t)
	faults, failoverRows := failoverFaults(t)
	dir := t.TempDir()
	jp := testkit.JobPlan(t, `
import os
import flinkgo as fg
from flinkgo import udf

DIR = os.environ["FLINKGO_TEST_DIR"]
FAULT = os.path.join(DIR, "fault")
env = fg.Environment(parallelism=2, config={
    "execution.checkpointing.interval": "200 ms",
    "execution.checkpointing.dir": os.path.join(DIR, "checkpoints"),
    "restart-strategy.type": "fixed-delay",
    "restart-strategy.fixed-delay.attempts": "100",
    "restart-strategy.fixed-delay.delay": "50 ms",
})

@udf("int64", func_type="pandas")
def double(x):
    # The test creates FAULT to make one task fail.
    try:
        os.remove(FAULT)
    except FileNotFoundError:
        return x * 2
    raise RuntimeError("injected task failure")

rows = env.datagen(rows=`+strconv.Itoa(failoverRows)+`, rows_per_second=8000, schema={"id": "int64"})
doubled = rows.with_column("y", double(fg.col("id")))
doubled.write_csv(os.path.join(DIR, "out"))
# Keyed state too: sums per key, kept in Pebble across the restarts.
keyed = doubled.with_column("k", fg.col("id") % 10).key_by("k").agg(fg.sum("y").alias("total"), fg.count().alias("n"))
keyed.write_csv(os.path.join(DIR, "sums"))
plan = env.plan("failover")
`, dir)
	g, err := plan.PlanWire(jp, plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	j, err := job.Start(context.Background(), g, runOptions(t, mem))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	// Every fault is injected until it has landed (a worker SIGKILLed, or
	// the fault file taken by the UDF, which then fails its task), so the
	// number of faults is a property of the test, not a threshold that a
	// loaded machine can miss.
	kills, failures := 0, 0
	for fault := range faults {
		// A real, random wait: the fault must land at an unplanned moment of
		// a real job (mid-bundle, mid-checkpoint, mid-restart).
		time.Sleep(time.Duration(300+rng.IntN(700)) * time.Millisecond)
		jobEnded := func() bool {
			select {
			case <-j.Done():
				return true
			default:
				return false
			}
		}
		if jobEnded() {
			t.Fatalf("the job ended after %d faults; it must outlive %d (slow it down)", fault, faults)
		}
		if fault%2 == 0 {
			// A worker may be restarting: wait for one to run.
			poll.Until(t, hangGuard, "a worker to kill", func() bool {
				if jobEnded() {
					t.Fatalf("the job ended after %d faults; it must outlive %d (slow it down)", fault, faults)
				}
				return killWorker(rng)
			})
			kills++
			continue
		}
		faultFile := filepath.Join(dir, "fault")
		if err := os.WriteFile(faultFile, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		poll.Until(t, hangGuard, "the UDF to take the fault file (its task then fails)", func() bool {
			if _, err := os.Stat(faultFile); errors.Is(err, fs.ErrNotExist) {
				return true
			}
			if jobEnded() {
				t.Fatalf("the job ended before injected failure %d landed; it must outlive %d faults (slow it down)", fault, faults)
			}
			return false
		})
		failures++
	}
	done := make(chan struct{})
	go func() {
		_, err = j.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Minute): // hang guard
		t.Fatal("the job did not end")
	}
	if err != nil {
		t.Fatalf("job failed: %v", err)
	}
	t.Logf("%d attempts after %d worker kills and %d task failures; %d checkpoints", j.Attempts(), kills, failures, len(j.Checkpoints()))

	// Exactly the rows of a run without failures: every id once, y = 2 id,
	// and the keyed sums.
	checkDoubledExactlyOnce(t, dir, failoverRows)
	if hidden, _ := filepath.Glob(filepath.Join(dir, "out", ".*")); len(hidden) > 0 {
		t.Errorf("hidden files left: %v", hidden)
	}
	// Checked after the data: faults that landed close together can share
	// one restart, but every landed fault fails the attempt it hits.
	if j.Attempts() < 2 {
		t.Errorf("%d attempts after %d worker kills and %d task failures: no fault restarted the job", j.Attempts(), kills, failures)
	}
}

// csvPartRows reads the rows (without headers) of the published CSV part
// files in dir.
func csvPartRows(t *testing.T, dir string) [][]string {
	t.Helper()
	parts, _ := filepath.Glob(filepath.Join(dir, "part-*"))
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

// killWorker SIGKILLs a running Python worker of this test process, if
// there is one, and reports whether it did.
func killWorker(rng *rand.Rand) bool {
	pid := workerPid(rng)
	return pid > 0 && syscall.Kill(pid, syscall.SIGKILL) == nil
}

// workerPid picks a running Python worker of this test process, or 0.
func workerPid(rng *rand.Rand) int {
	var workers []int
	for _, pid := range testkit.ChildPids() {
		cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		if strings.Contains(string(cmdline), "flinkgo.worker") {
			workers = append(workers, pid)
		}
	}
	if len(workers) == 0 {
		return 0
	}
	return workers[rng.IntN(len(workers))]
}
