package integration_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/integration/testkit"
	"github.com/flinkgo/flinkgo/pipeline"
	"github.com/flinkgo/flinkgo/runtime/job"
	"github.com/flinkgo/flinkgo/udf/bridge"
	"github.com/flinkgo/flinkgo/udf/bridge/pluginrunner"
)

// chaosRounds is how many rounds TestChaos runs: $FLINKGO_CHAOS_ROUNDS
// (CI runs a short round, `make chaos` a long one), default 3.
func chaosRounds(t *testing.T) int {
	n := 3
	if v := os.Getenv("FLINKGO_CHAOS_ROUNDS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("FLINKGO_CHAOS_ROUNDS=%q is not a positive integer", v)
		}
	}
	return n
}

type chaosAction string

const (
	actNone     chaosAction = "none"
	actCancel   chaosAction = "cancel"
	actKill     chaosAction = "sigkill-worker"
	actStopThen chaosAction = "sigstop-worker-then-cancel"
	// actCancelChild cancels while a UDF waits on a child process it
	// started; the child must be gone after the cancel.
	actCancelChild chaosAction = "cancel-with-udf-child"
	// actCancelGIL cancels while a UDF holds the GIL in a C loop.
	actCancelGIL chaosAction = "cancel-with-gil-held"
	// actCancelSetsidChild cancels once a UDF started a child in a session
	// of its own (start_new_session=True) that holds the worker's stdout and
	// stderr and sleeps; the cancel must not wait on it and the child must
	// be gone after it.
	actCancelSetsidChild chaosAction = "cancel-with-setsid-child"
)

// cancelLatency collects how long each cancel took, by the UDF's state,
// for the figures TestChaos logs (never asserted: a hang guard bounds it).
var cancelLatency = map[chaosAction][]time.Duration{}

// roundsDone counts the rounds by the action that landed (a run that ended
// first counts as none), for the same figures.
var roundsDone = map[chaosAction]int{}

// TestChaos cancels runs, kills workers and hangs them at random moments.
// Every round must stop promptly (a hang guard, not a timing), leave no
// worker process, goroutine or Arrow buffer behind, and deliver a prefix of
// the correct output: nothing lost in the middle, nothing twice.
func TestChaos(t *testing.T) {
	rounds := chaosRounds(t)
	seed := uint64(time.Now().UnixNano())
	t.Logf("chaos seed %d, %d rounds", seed, rounds)
	rng := rand.New(rand.NewPCG(seed, seed>>1))
	// The first rounds (CI runs 3) take the hardest cases first.
	actions := []chaosAction{actCancelChild, actCancelGIL, actCancelSetsidChild, actKill, actStopThen, actCancel, actNone}
	for round := range rounds {
		action := actions[round%len(actions)]
		if round >= len(actions) {
			action = actions[rng.IntN(len(actions))]
		}
		delay := time.Duration(rng.IntN(1500)) * time.Millisecond
		// Every fault on both batch transports: the shared regions must go
		// with the runners however they end.
		for _, tr := range []pluginrunner.Transport{pluginrunner.TransportSharedMemory, pluginrunner.TransportUnixSocket} {
			t.Run(fmt.Sprintf("round%d-%s-%s-after-%s", round, tr, action, delay), func(t *testing.T) {
				chaosRound(t, tr, action, delay)
			})
		}
	}
	logCancelFigures(t)
}

// logCancelFigures logs the cancel latencies by UDF state: count, p50, p99
// and max (docs/benchmarks.md's chaos table comes from these lines).
func logCancelFigures(t *testing.T) {
	t.Logf("FIGURES chaos rounds by fault: %v", roundsDone)
	for _, a := range []chaosAction{actCancel, actStopThen, actCancelChild, actCancelGIL, actCancelSetsidChild} {
		d := slices.Clone(cancelLatency[a])
		if len(d) == 0 {
			continue
		}
		slices.Sort(d)
		q := func(p float64) time.Duration { return d[min(len(d)-1, int(p*float64(len(d))))] }
		t.Logf("FIGURES cancel %s: %d runs, p50 %s, p99 %s, max %s", a, len(d),
			q(0.50).Round(time.Millisecond), q(0.99).Round(time.Millisecond), d[len(d)-1].Round(time.Millisecond))
	}
}

func chaosRound(t *testing.T, transport pluginrunner.Transport, action chaosAction, delay time.Duration) {
	e := newEnv(t)
	pidDir, markDir := t.TempDir(), t.TempDir()
	specs := testkit.UDFSpecs(t, fmt.Sprintf(`
import itertools, os, subprocess, time
from flinkgo import udf

def take(name):
    try:
        os.remove(os.path.join(%[2]q, name))
        return True
    except FileNotFoundError:
        return False

@udf("int64", func_type="pandas")
def slow_double(x):
    open(os.path.join(%[1]q, str(os.getpid())), "a").close()
    if take("child"):
        subprocess.Popen(["sleep", "1000"]).wait()
    if take("setsid-child"):
        subprocess.Popen(["sleep", "1000"], start_new_session=True)
    if take("hog"):
        sum(itertools.repeat(1, 10**12))  # holds the GIL
    time.sleep(0.01)
    return x * 2
`, pidDir, markDir))
	const batches, rows = 60, 500
	inputs := e.int64Batches(batches, rows)
	defer release(inputs)
	chain := chainOf(inputs[0].Schema(), testkit.Call(specs["slow_double"], "y", "x"))
	opts := e.options(2)
	opts.BatchSize = 250
	opts.Runner.Transport = transport

	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	var got []int64
	done := make(chan error, 1)
	in := make(chan arrow.RecordBatch)
	go func() {
		defer close(in)
		for _, b := range inputs {
			b.Retain()
			select {
			case in <- b:
			case <-ctx.Done():
				b.Release()
				return
			}
		}
	}()
	go func() {
		done <- pipeline.Run(ctx, chain, opts, in, func(b arrow.RecordBatch) error {
			defer b.Release()
			for i := range int(b.NumRows()) {
				got = append(got, b.Column(0).(*array.Int64).Value(i))
			}
			return nil
		})
	}()

	var victim, child int
	var err error
	var canceled time.Time
	select {
	case err = <-done:
		// Finished before the action.
		action = actNone
	case <-time.After(delay):
		victim = pickWorker(pidDir)
		// A fault on a worker lands on one that runs: wait for it, unless
		// the run ends first (a worker starts in about a second).
		ended := false
		for deadline := time.Now().Add(hangGuard); victim == 0 && (action == actKill || action == actStopThen); victim = pickWorker(pidDir) {
			select {
			case err = <-done:
				ended = true
			case <-time.After(10 * time.Millisecond):
			}
			if ended || time.Now().After(deadline) {
				break
			}
		}
		if ended {
			action = actNone // finished before the action
			break
		}
		if action == actCancelChild || action == actCancelGIL || action == actCancelSetsidChild {
			var ended bool
			if child, ended, err = udfTookMark(t, markDir, action, done); ended {
				action = actNone // finished before a UDF took the mark
				break
			}
			canceled = time.Now()
			cancel(errChaosCancel)
			select {
			case err = <-done:
			case <-time.After(60 * time.Second): // hang guard
				t.Fatalf("run did not stop after %s", action)
			}
			cancelLatency[action] = append(cancelLatency[action], time.Since(canceled))
			break
		}
		switch {
		case action == actCancel || (victim == 0 && action != actNone):
			action = actCancel
			cancel(errChaosCancel)
		case action == actKill:
			_ = syscall.Kill(victim, syscall.SIGKILL)
		case action == actStopThen:
			_ = syscall.Kill(victim, syscall.SIGSTOP)
			cancel(errChaosCancel)
		}
		canceled = time.Now()
		select {
		case err = <-done:
		case <-time.After(60 * time.Second): // hang guard
			t.Fatalf("run did not stop after %s", action)
		}
		if action == actCancel || action == actStopThen {
			cancelLatency[action] = append(cancelLatency[action], time.Since(canceled))
		}
	}
	// Run stops reading early on failure: stop the feeder and free what it
	// still hands over.
	cancel(errChaosCancel)
	for b := range in {
		b.Release()
	}

	roundsDone[action]++
	switch action {
	case actNone:
		if err != nil {
			t.Fatalf("undisturbed run failed: %v", err)
		}
		if len(got) != batches*rows {
			t.Fatalf("undisturbed run gave %d rows, want %d", len(got), batches*rows)
		}
	case actCancel, actStopThen, actCancelChild, actCancelGIL, actCancelSetsidChild:
		if err != nil && !errors.Is(err, errChaosCancel) {
			t.Errorf("canceled run returned %v, want the cancel cause", err)
		}
	case actKill:
		var exitErr *bridge.WorkerExitError
		if err != nil && !errors.As(err, &exitErr) && !errors.Is(err, bridge.ErrWorkerLost) {
			t.Errorf("run with a killed worker returned %v, want the worker's exit", err)
		}
	}
	for i, v := range got {
		if v != int64(2*i) {
			t.Fatalf("row %d is %d, want %d: the output is not a prefix of the correct output", i, v, 2*i)
		}
	}
	// Run returned after closing or canceling its runners: no region of
	// theirs is mapped here (a memfd has no file to leave behind).
	if n := sharedRegionsMapped(t); n != 0 {
		t.Errorf("the host still maps %d shared-memory regions after %s", n, action)
	}
	if victim != 0 && !testkit.WaitGone(victim, 10*time.Second) {
		t.Errorf("worker %d survived %s", victim, action)
	}
	if child != 0 && !testkit.WaitGone(child, 10*time.Second) {
		_ = syscall.Kill(child, syscall.SIGKILL)
		t.Errorf("the UDF's child %d survived %s", child, action)
	}
}

// udfTookMark makes a UDF take the mark of action (start a child, or hold
// the GIL) and waits until it did; for a child, until it runs, and returns
// its pid. When the run ends first, it reports that with the run's error.
func udfTookMark(t *testing.T, dir string, action chaosAction, done <-chan error) (child int, ended bool, runErr error) {
	name := map[chaosAction]string{actCancelChild: "child", actCancelGIL: "hog", actCancelSetsidChild: "setsid-child"}[action]
	mark := filepath.Join(dir, name)
	if err := os.WriteFile(mark, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(hangGuard); ; time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(mark); os.IsNotExist(err) {
			break
		}
		select {
		case err := <-done:
			return 0, true, err
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no UDF took the mark %s", name)
		}
	}
	if action != actCancelChild && action != actCancelSetsidChild {
		return 0, false, nil
	}
	for deadline := time.Now().Add(hangGuard); ; time.Sleep(5 * time.Millisecond) {
		// One listing: a second one may already miss a process that exited.
		procs := descendants(os.Getpid())
		if i := slices.IndexFunc(procs, isSleep); i >= 0 {
			return procs[i], false, nil
		}
		if time.Now().After(deadline) {
			t.Fatal("the UDF's child never ran")
		}
	}
}

var errChaosCancel = errors.New("chaos: canceled")

// sharedRegionsMapped counts the UDF bridge's shared-memory regions this
// process maps (pluginrunner's memfds show by name in /proc/self/maps).
func sharedRegionsMapped(t *testing.T) int {
	t.Helper()
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(maps), "memfd:flinkgo-udf-batches")
}

// pickWorker returns the pid of a worker that has started processing, or 0.
func pickWorker(dir string) int {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil && testkit.Alive(pid) {
			return pid
		}
	}
	return 0
}

// TestChaosUnalignedCheckpointRestore is the chaos suite's unaligned
// round kind: $FLINKGO_CHAOS_ROUNDS times, once an unaligned checkpoint
// with channel state has completed, a Python worker is SIGKILLed at a
// random moment; the job restores from its latest checkpoint each time,
// replaying the channel state before new input. The committed output
// is exactly an uninterrupted run's.
func TestChaosUnalignedCheckpointRestore(t *testing.T) {
	testkit.NoLeakedWorkers(t)
	rounds := chaosRounds(t)
	// About two seconds of UDF work per round: each kill lands after a
	// checkpoint of the attempt it hits, and the job must outlive them.
	rows := 16000 * (rounds + 1)
	dir := t.TempDir()
	g := backpressuredJob(t, dir, rows, 0.25, true, "400 ms")
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	opts := backpressuredOptions(t, mem)
	log := &restoreLog{}
	opts.Logger = slog.New(log)
	j, err := job.Start(context.Background(), g, opts)
	if err != nil {
		t.Fatal(err)
	}
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 11))
	var last int64
	for round := range rounds {
		c := waitForChannelState(t, j, last)
		last = c.ID
		// A real, random wait: the kill lands at an unplanned moment of the
		// real job after the checkpoint.
		time.Sleep(time.Duration(rng.IntN(200)) * time.Millisecond)
		for !killWorker(rng) {
			select {
			case <-j.Done():
				t.Fatalf("the job ended after %d kills; it must outlive %d (slow it down)", round, rounds)
			case <-time.After(20 * time.Millisecond):
			}
		}
		t.Logf("round %d: worker killed after checkpoint %d (%d bytes of channel state)", round, c.ID, c.PersistedData)
	}
	done := make(chan error, 1)
	go func() {
		_, err := j.Wait()
		done <- err
	}()
	select {
	case err = <-done:
	case <-time.After(5 * time.Minute): // hang guard
		t.Fatal("the job did not end")
	}
	if err != nil {
		t.Fatalf("job failed: %v", err)
	}
	checkDoubledExactlyOnce(t, dir, rows)
	log.mu.Lock()
	defer log.mu.Unlock()
	t.Logf("seed %d, %d attempts; restores:%v", seed, j.Attempts(), log.restores)
	if log.replayed == 0 {
		t.Errorf("no attempt restored channel state (restores: %v): the test did not exercise the replay", log.restores)
	}
}
