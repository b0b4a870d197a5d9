package integration_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/flinkgo/flinkgo/integration/testkit"
	"github.com/flinkgo/flinkgo/internal/poll"
	"github.com/flinkgo/flinkgo/runtime/job"
	"github.com/flinkgo/flinkgo/runtime/plan"
)

// The Kafka sink under the failover faults, against a real broker
// (testkit.Kafka): a read_committed reader of an exactly-once sink sees
// every id once; an at-least-once sink of the same job, under the same
// faults, duplicates.

// idCounts reads topic as a read_committed (or read_uncommitted) consumer
// and counts each id of the JSON values {"id": n, "y": 2n}.
func idCounts(t *testing.T, b *testkit.KafkaBroker, topic string, readCommitted bool) map[int64]int {
	t.Helper()
	counts := map[int64]int{}
	for _, r := range b.Records(t, topic, readCommitted) {
		var v struct{ ID, Y int64 }
		if err := json.Unmarshal(r.Value, &v); err != nil {
			t.Fatalf("%s offset %d: %q: %v", topic, r.Offset, r.Value, err)
		}
		if v.Y != 2*v.ID {
			t.Fatalf("%s offset %d: %s: y != 2 id", topic, r.Offset, r.Value)
		}
		counts[v.ID]++
	}
	return counts
}

// endOffsetSum is the number of records topic holds over its partitions.
func endOffsetSum(t *testing.T, admin *kadm.Client, topic string) int64 {
	t.Helper()
	ends, err := admin.ListEndOffsets(context.Background(), topic)
	if err != nil {
		t.Fatalf("end offsets of %s: %v", topic, err)
	}
	var sum int64
	ends.Each(func(o kadm.ListedOffset) { sum += o.Offset })
	return sum
}

// duplicatesAndMissing compares counts with every id of [0, rows) once.
func duplicatesAndMissing(counts map[int64]int, rows int) (dups, missing int) {
	for id := range int64(rows) {
		n := counts[id]
		if n == 0 {
			missing++
		}
		dups += max(0, n-1)
	}
	return dups, missing
}

// offsets are a topic's offsets by partition: the end offsets, or the last
// stable offsets (the end for read_committed readers).
func offsets(t *testing.T, adm *kadm.Client, topic string, stable bool) map[int32]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var l kadm.ListedOffsets
	var err error
	if stable {
		l, err = adm.ListCommittedOffsets(ctx, topic)
	} else {
		l, err = adm.ListEndOffsets(ctx, topic)
	}
	if err == nil {
		err = l.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32]int64{}
	l.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
	return out
}

// TestFailoverKeepsKafkaSinkExactlyOnce runs a checkpointed job (datagen →
// Python UDF → two Kafka sinks, exactly-once and at-least-once, at
// parallelism 2) while workers are SIGKILLed and tasks fail, as
// TestFailoverKeepsFileSinkExactlyOnce: each fault restarts the job from its
// latest checkpoint, so the at-least-once sink writes again what it wrote
// after it, and the exactly-once sink's transactions of the failed attempt
// are aborted (issue 13, item 2).
func TestFailoverKeepsKafkaSinkExactlyOnce(t *testing.T) {
	testkit.NoLeakedWorkers(t)
	b := testkit.Kafka(t)
	exact, atLeast := b.CreateTopic(t, 3), b.CreateTopic(t, 3)
	faults, _ := failoverFaults(t)
	rows := 20000 * faults // each fault waits for a checkpoint of the restarted attempt
	dir := t.TempDir()
	jp := testkit.JobPlan(t, fmt.Sprintf(`
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
    "python.fn-execution.bundle.time": "20 ms",
})

@udf("int64", func_type="pandas")
def double(x):
    # The test creates FAULT to make one task fail.
    try:
        os.remove(FAULT)
    except FileNotFoundError:
        return x * 2
    raise RuntimeError("injected task failure")

rows = env.datagen(rows=%d, rows_per_second=8000, schema={"id": "int64"})
doubled = rows.with_column("y", double(fg.col("id")))
doubled.write_kafka(%q, bootstrap_servers=%q, key="id", transactional_id_prefix=%q)
doubled.write_kafka(%q, bootstrap_servers=%q, delivery="at-least-once")
plan = env.plan("kafka-failover")
`, rows, exact, b.Addr, "failover-"+exact, atLeast, b.Addr), dir)
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
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 11))
	jobEnded := func() bool {
		select {
		case <-j.Done():
			return true
		default:
			return false
		}
	}
	admin := b.Admin(t)
	kills, failures := 0, 0
	checkpoints := 0
	for fault := range faults {
		// Each fault lands while rows flow through the restarted attempt:
		// after a checkpoint it completed, so that the at-least-once sink
		// has written rows past the checkpoint it restores.
		poll.Until(t, hangGuard, "a checkpoint of the restarted attempt", func() bool {
			if jobEnded() {
				t.Fatalf("the job ended after %d faults; it must outlive %d (slow it down)", fault, faults)
			}
			return len(j.Checkpoints()) > checkpoints
		})
		checkpoints = len(j.Checkpoints())
		// Rows past that checkpoint reach the at-least-once topic before
		// the fault, so that its restart writes them again.
		written := endOffsetSum(t, admin, atLeast)
		poll.Until(t, hangGuard, "rows past the checkpoint in the at-least-once topic", func() bool {
			return endOffsetSum(t, admin, atLeast) != written || jobEnded()
		})
		// A real, random wait: the fault lands at an unplanned moment.
		time.Sleep(time.Duration(rng.IntN(100)) * time.Millisecond)
		if jobEnded() {
			t.Fatalf("the job ended after %d faults; it must outlive %d (slow it down)", fault, faults)
		}
		if fault%2 == 0 {
			poll.Until(t, hangGuard, "a worker to kill", func() bool { // a worker may be restarting
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
	if j.Attempts() < 2 {
		t.Fatalf("%d attempts after %d worker kills and %d task failures: no fault restarted the job", j.Attempts(), kills, failures)
	}

	// Nothing stays open: the job committed its last transactions at its
	// end and each restart aborted what the failed attempt had open.
	waitNoOpenTransaction(t, admin, exact)
	dups, missing := duplicatesAndMissing(idCounts(t, b, exact, true), rows)
	if dups != 0 || missing != 0 {
		t.Errorf("exactly-once: a read_committed reader sees %d duplicates and %d missing of %d ids", dups, missing, rows)
	}
	uncommittedDups, _ := duplicatesAndMissing(idCounts(t, b, exact, false), rows)
	aloDups, aloMissing := duplicatesAndMissing(idCounts(t, b, atLeast, true), rows)
	if aloMissing != 0 {
		t.Errorf("at-least-once: %d of %d ids missing", aloMissing, rows)
	}
	// Every fault lands while rows flow, after the sink wrote some past the
	// last checkpoint, so the restart writes those again.
	if aloDups == 0 {
		t.Errorf("at-least-once: no duplicate after %d restarts; the test cannot tell the delivery modes apart", j.Attempts()-1)
	}
	t.Logf("FIGURES kafka-failover: %d attempts (%d worker kills, %d task failures), %d checkpoints, %d ids; "+
		"exactly-once read_committed: %d duplicates, %d missing (read_uncommitted would see %d duplicates, in aborted transactions); "+
		"at-least-once: %d duplicates, %d missing",
		j.Attempts(), kills, failures, len(j.Checkpoints()), rows, dups, missing, uncommittedDups, aloDups, aloMissing)
}

// kafkaRuntimeKillPipeline is the program of TestChaosRuntimeSIGKILLKafkaSink:
// a checkpointed job writing exactly-once to Kafka, run by `flinkgo run`.
const kafkaRuntimeKillPipeline = `
import os, sys
import flinkgo as fg
from flinkgo import udf

DIR, ROWS, TOPIC, SERVERS = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
env = fg.Environment(parallelism=2, config={
    "execution.checkpointing.interval": "200 ms",
    "execution.checkpointing.dir": os.path.join(DIR, "checkpoints"),
    "execution.checkpointing.num-retained": "2",
    "execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION",
    # Rows reach the sink between barriers, not only at them (bundles end
    # at every barrier and after 1 s by default).
    "python.fn-execution.bundle.time": "20 ms",
})

@udf("int64", func_type="pandas")
def double(x):
    return x * 2

rows = env.datagen(rows=ROWS, rows_per_second=4000, schema={"id": "int64"})
rows.with_column("y", double(fg.col("id"))).write_kafka(
    TOPIC, bootstrap_servers=SERVERS, transactional_id_prefix="runtime-kill-" + TOPIC)
env.execute("runtime-kill-kafka")
`

// TestChaosRuntimeSIGKILLKafkaSink kills the runtime process (`flinkgo
// run`) with SIGKILL, FLINKGO_CHAOS_ROUNDS times, while it writes to Kafka
// exactly-once, and restarts it from the latest retained checkpoint. The
// killed runtime leaves transactions open; each restart aborts them (the
// last stable offsets pass the end offsets of the kill without waiting for
// the transaction timeout) and commits what its checkpoint precommitted.
// At the end a read_committed reader sees every id once (issue 13, item 2).
func TestChaosRuntimeSIGKILLKafkaSink(t *testing.T) {
	python := testkit.Python(t)
	b := testkit.Kafka(t)
	topic := b.CreateTopic(t, 3)
	adm := b.Admin(t)
	rounds := chaosRounds(t)
	rows := 4000 * (rounds + 2)
	work := t.TempDir()
	bin := filepath.Join(work, "flinkgo")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/flinkgo").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	script := filepath.Join(work, "pipeline.py")
	if err := os.WriteFile(script, []byte(kafkaRuntimeKillPipeline), 0o600); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp("", "fgk-") // short, for the workers' socket paths
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(tmp) })
	start := func(from string) (*exec.Cmd, *bytes.Buffer) {
		args := []string{"run"}
		if from != "" {
			args = append(args, "--from-savepoint", from)
		}
		cmd := exec.Command(bin, append(args, script, work, strconv.Itoa(rows), topic, b.Addr)...)
		cmd.Env = append(os.Environ(), "FLINKGO_PYTHON="+python, "TMPDIR="+tmp)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd, &out
	}
	exited := func(cmd *exec.Cmd) bool {
		var ws syscall.WaitStatus
		pid, _ := syscall.Wait4(cmd.Process.Pid, &ws, syscall.WNOHANG|syscall.WNOWAIT, nil)
		return pid == cmd.Process.Pid
	}
	from := ""
	lingering := 0
	for round := range rounds {
		cmd, out := start(from)
		if round > 0 {
			// The restart's recovery aborted the transactions the kill left
			// open: the last stable offsets reach the ends of the kill.
			waitStableAtLeast(t, adm, topic, killEnds(t, from), cmd, out)
		}
		before := latestCheckpoint(work)
		for deadline := time.Now().Add(hangGuard); latestCheckpoint(work) == before; {
			if exited(cmd) || time.Now().After(deadline) {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
				t.Fatalf("round %d: the job ended or made no checkpoint before its kill (it must outlive %d kills):\n%s", round, rounds, out)
			}
			time.Sleep(20 * time.Millisecond)
		}
		// Kill while a transaction holds written rows (almost always: rows
		// flow), or after a few tries anyway.
		for try := 0; try < 100; try++ {
			if lso, end := offsets(t, adm, topic, true), offsets(t, adm, topic, false); fmt.Sprint(lso) != fmt.Sprint(end) {
				break
			}
			time.Sleep(time.Duration(rand.IntN(20)) * time.Millisecond) // real and random: a try at an unplanned moment
		}
		procs := descendants(cmd.Process.Pid)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		for _, pid := range procs {
			if !testkit.WaitGone(pid, 15*time.Second) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
				t.Errorf("round %d: process %d outlived the SIGKILLed runtime", round, pid)
			}
		}
		if lso, end := offsets(t, adm, topic, true), offsets(t, adm, topic, false); fmt.Sprint(lso) != fmt.Sprint(end) {
			lingering++ // the kill left a transaction open (the usual case)
		}
		if from = latestCheckpoint(work); from == "" {
			t.Fatalf("round %d: no retained checkpoint to restore from", round)
		}
		saveEnds(t, adm, topic, from)
	}
	cmd, out := start(from)
	waitStableAtLeast(t, adm, topic, killEnds(t, from), cmd, out)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the last attempt failed: %v\n%s", err, out)
		}
	case <-time.After(5 * time.Minute): // hang guard
		_ = cmd.Process.Kill()
		<-done // out is written until the process is gone
		t.Fatalf("the last attempt did not end:\n%s", out)
	}
	waitNoOpenTransaction(t, adm, topic)
	dups, missing := duplicatesAndMissing(idCounts(t, b, topic, true), rows)
	if dups != 0 || missing != 0 {
		t.Errorf("a read_committed reader sees %d duplicates and %d missing of %d ids", dups, missing, rows)
	}
	if lingering == 0 {
		t.Errorf("no kill left a transaction open: the test showed no abort on restore")
	}
	uncommittedDups, _ := duplicatesAndMissing(idCounts(t, b, topic, false), rows)
	t.Logf("FIGURES kafka-runtime-sigkill: %d kills (%d left a transaction open, each aborted by the restart), %d ids; "+
		"read_committed: %d duplicates, %d missing; read_uncommitted: %d duplicates",
		rounds, lingering, rows, dups, missing, uncommittedDups)
}

// saveEnds records the topic's end offsets at a kill beside the checkpoint
// the restart restores, for killEnds.
func saveEnds(t *testing.T, adm *kadm.Client, topic, checkpoint string) {
	t.Helper()
	data, err := json.Marshal(offsets(t, adm, topic, false))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(checkpoint+".ends", data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// killEnds are the end offsets saveEnds recorded at the kill before a
// restore of checkpoint.
func killEnds(t *testing.T, checkpoint string) map[int32]int64 {
	t.Helper()
	data, err := os.ReadFile(checkpoint + ".ends")
	if err != nil {
		t.Fatal(err)
	}
	ends := map[int32]int64{}
	if err := json.Unmarshal(data, &ends); err != nil {
		t.Fatal(err)
	}
	return ends
}

// waitStableAtLeast waits until every partition's last stable offset has
// reached ends: no transaction open at the kill holds a read_committed
// reader any more. The transaction timeout is 15 minutes, so only the
// restart's abort can get there within the hang guard.
func waitStableAtLeast(t *testing.T, adm *kadm.Client, topic string, ends map[int32]int64, cmd *exec.Cmd, out *bytes.Buffer) {
	t.Helper()
	for deadline := time.Now().Add(hangGuard); ; time.Sleep(20 * time.Millisecond) {
		lso := offsets(t, adm, topic, true)
		behind := false
		for p, end := range ends {
			if lso[p] < end {
				behind = true
			}
		}
		if !behind {
			return
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("the last stable offsets %v stay below the ends of the kill %v: the restart did not abort the transactions the killed runtime left open\n%s", lso, ends, out)
		}
	}
}

// waitNoOpenTransaction waits until topic's last stable offsets are its end
// offsets: the broker writes a transaction's commit markers just after the
// commit returns, so they can trail the end of a job by a moment.
func waitNoOpenTransaction(t *testing.T, adm *kadm.Client, topic string) {
	t.Helper()
	for deadline := time.Now().Add(hangGuard); ; time.Sleep(20 * time.Millisecond) {
		lso, end := offsets(t, adm, topic, true), offsets(t, adm, topic, false)
		if fmt.Sprint(lso) == fmt.Sprint(end) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the last stable offsets of %q stay at %v, below the ends %v: a transaction stays open", topic, lso, end)
		}
	}
}
