package integration_test

import (
	"bytes"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flinkgo/flinkgo/integration/testkit"
)

// runtimeKillPipeline is the user's program of TestChaosRuntimeSIGKILL: a
// checkpointed job with a Python UDF, a keyed aggregation and exactly-once
// file sinks. When the file HOG exists, the UDF takes it and holds the GIL
// in a C loop (the runtime is then killed under it); when CHILD exists, it
// takes it and starts a child process first.
const runtimeKillPipeline = `
import itertools, os, subprocess, sys
import flinkgo as fg
from flinkgo import udf

DIR = sys.argv[1]
ROWS = int(sys.argv[2])
env = fg.Environment(parallelism=2, config={
    "execution.checkpointing.interval": "200 ms",
    "execution.checkpointing.dir": os.path.join(DIR, "checkpoints"),
    "execution.checkpointing.num-retained": "2",
    "execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION",
})

def take(name):
    try:
        os.remove(os.path.join(DIR, name))
        return True
    except FileNotFoundError:
        return False

@udf("int64", func_type="pandas")
def double(x):
    if take("child"):
        subprocess.Popen(["sleep", "1000"])
    if take("hog"):
        sum(itertools.repeat(1, 10**12))  # holds the GIL until the kill
    return x * 2

rows = env.datagen(rows=ROWS, rows_per_second=4000, schema={"id": "int64"})
doubled = rows.with_column("y", double(fg.col("id")))
doubled.write_csv(os.path.join(DIR, "out"))
keyed = doubled.with_column("k", fg.col("id") % 10).key_by("k").agg(fg.sum("y").alias("total"), fg.count().alias("n"))
keyed.write_csv(os.path.join(DIR, "sums"))
env.execute("runtime-kill")
`

// descendants lists the live processes under pid (children, theirs, ...).
func descendants(pid int) []int {
	parent := map[int]int{}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, path := range stats {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		rest := bytes.Fields(b[bytes.LastIndexByte(b, ')')+1:])
		if len(rest) < 2 || string(rest[0]) == "Z" {
			continue
		}
		p, _ := strconv.Atoi(filepath.Base(filepath.Dir(path)))
		parent[p], _ = strconv.Atoi(string(rest[1]))
	}
	var out []int
	for p := range parent {
		for q := parent[p]; q > 1; q = parent[q] {
			if q == pid {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// latestCheckpoint is the newest completed checkpoint under dir, or "".
func latestCheckpoint(dir string) string {
	metas, _ := filepath.Glob(filepath.Join(dir, "checkpoints", "*", "chk-*", "_metadata"))
	best, bestTime := "", time.Time{}
	for _, m := range metas {
		if info, err := os.Stat(m); err == nil && info.ModTime().After(bestTime) {
			best, bestTime = filepath.Dir(m), info.ModTime()
		}
	}
	return best
}

// TestChaosRuntimeSIGKILL kills the runtime process itself (`flinkgo run`)
// with SIGKILL, FLINKGO_CHAOS_ROUNDS times, and restarts it from the latest
// retained checkpoint each time; in some rounds a UDF holds the GIL at the
// kill, in others it has started a child process. The committed output is
// exactly that of a run without faults (every id once, keyed sums exact),
// every process under a killed runtime is gone within a bounded wait, and
// the temp dir is empty at the end (issue 9, items 5, 7 and 13).
func TestChaosRuntimeSIGKILL(t *testing.T) {
	python := testkit.Python(t)
	rounds := chaosRounds(t)
	rows := 4000 * (rounds + 2)
	work := t.TempDir()
	bin := filepath.Join(work, "flinkgo")
	build := exec.Command("go", "build", "-o", bin, "../cmd/flinkgo")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	script := filepath.Join(work, "pipeline.py")
	if err := os.WriteFile(script, []byte(runtimeKillPipeline), 0o600); err != nil {
		t.Fatal(err)
	}
	// The runtimes' temp dir: short, for the workers' socket paths.
	tmp, err := os.MkdirTemp("", "fgc-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(tmp) })
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 13))
	t.Logf("seed %d, %d kills, %d rows", seed, rounds, rows)

	start := func(from string) (*exec.Cmd, *bytes.Buffer) {
		args := []string{"run"}
		if from != "" {
			args = append(args, "--from-savepoint", from)
		}
		cmd := exec.Command(bin, append(args, script, work, strconv.Itoa(rows))...)
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
	faults := map[string]int{}
	for round := range rounds {
		cmd, out := start(from)
		before := latestCheckpoint(work)
		// Kill once this attempt has completed a checkpoint of its own.
		for deadline := time.Now().Add(hangGuard); latestCheckpoint(work) == before; {
			if exited(cmd) || time.Now().After(deadline) {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
				t.Fatalf("round %d: the job ended or made no checkpoint before its kill (it must outlive %d kills):\n%s", round, rounds, out)
			}
			time.Sleep(20 * time.Millisecond)
		}
		kind := [...]string{"busy", "gil-held", "udf-child"}[round%3]
		switch kind {
		case "gil-held", "udf-child":
			name := map[string]string{"gil-held": "hog", "udf-child": "child"}[kind]
			mark := filepath.Join(work, name)
			if err := os.WriteFile(mark, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			for deadline := time.Now().Add(hangGuard); ; time.Sleep(10 * time.Millisecond) {
				if _, err := os.Stat(mark); os.IsNotExist(err) {
					break // a UDF took it
				}
				if exited(cmd) || time.Now().After(deadline) {
					_ = cmd.Process.Kill()
					_ = cmd.Wait()
					t.Fatalf("round %d: no UDF took %s:\n%s", round, name, out)
				}
			}
			if kind == "udf-child" {
				// Until the child runs under the runtime.
				for deadline := time.Now().Add(hangGuard); !slices.ContainsFunc(descendants(cmd.Process.Pid), isSleep); time.Sleep(10 * time.Millisecond) {
					if time.Now().After(deadline) {
						t.Fatalf("round %d: the UDF's child never ran", round)
					}
				}
			}
		default:
			// A real, random wait: the SIGKILL lands at an unplanned moment.
			time.Sleep(time.Duration(rng.IntN(300)) * time.Millisecond)
		}
		procs := descendants(cmd.Process.Pid)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		faults[kind]++
		for _, pid := range procs {
			if !testkit.WaitGone(pid, 15*time.Second) {
				cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
				_ = syscall.Kill(pid, syscall.SIGKILL)
				t.Errorf("round %d (%s): process %d (%s) outlived the SIGKILLed runtime", round, kind, pid, bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))
			}
		}
		if from = latestCheckpoint(work); from == "" {
			t.Fatalf("round %d: no retained checkpoint to restore from", round)
		}
	}
	cmd, out := start(from)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the last attempt failed: %v\n%s", err, out)
		}
	case <-time.After(5 * time.Minute): // hang guard
		_ = cmd.Process.Kill()
		t.Fatalf("the last attempt did not end:\n%s", out)
	}

	// Exactly the rows of a run without faults: every id once, y = 2 id.
	ids := doubledIDs(t, filepath.Join(work, "out"))
	dups, missing := 0, 0
	for i, next := 0, int64(0); next < int64(rows); next++ {
		n := 0
		for i < len(ids) && ids[i] == next {
			n++
			i++
		}
		if n == 0 {
			missing++
		}
		dups += max(0, n-1)
	}
	if dups != 0 || missing != 0 || len(ids) != rows {
		t.Errorf("committed %d rows for %d ids: %d duplicates, %d missing", len(ids), rows, dups, missing)
	}
	checkKeyedSums(t, filepath.Join(work, "sums"), rows)
	left, _ := os.ReadDir(tmp)
	var names []string
	for _, e := range left {
		names = append(names, e.Name())
	}
	if len(names) != 0 {
		t.Errorf("left in the runtimes' temp dir after the last runtime ended: %q", names)
	}
	t.Logf("FIGURES runtime-sigkill: %d kills %v, %d ids, %d duplicates, %d missing, keyed sums exact: %v, leftovers %d",
		rounds, faults, rows, dups, missing, !t.Failed(), len(names))
}

// hangGuard only turns a hang into a failure; nothing asserts durations.
const hangGuard = 2 * time.Minute

func isSleep(pid int) bool {
	cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return strings.HasPrefix(string(cmdline), "sleep\x00")
}
