//go:build linux

package pluginrunner_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flinkgo/flinkgo/integration/testkit"
	"github.com/flinkgo/flinkgo/internal/poll"
	"github.com/flinkgo/flinkgo/udf/bridge"
	"github.com/flinkgo/flinkgo/udf/bridge/bridgetest/goworker"
	"github.com/flinkgo/flinkgo/udf/bridge/pluginrunner"
)

// groupMembers lists the live processes whose process group is pgid.
func groupMembers(pgid int) []int {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var pids []int
	for _, path := range stats {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		// Fields after the command's closing parenthesis: state ppid pgrp.
		rest := bytes.Fields(b[bytes.LastIndexByte(b, ')')+1:])
		if len(rest) < 3 || string(rest[0]) == "Z" {
			continue
		}
		if g, _ := strconv.Atoi(string(rest[2])); g == pgid {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(path)))
			pids = append(pids, pid)
		}
	}
	return pids
}

func TestCancelKillsChildrenTheUDFStarted(t *testing.T) {
	f := newFixture(t, goWorker(goworker.Serve))
	r := f.runner(int64Schema, goUDF("forker", goworker.SpawnChild))
	defer r.Cancel()
	b := f.int64Batch(1)
	defer b.Release()
	if err := r.Process(context.Background(), 0, b); err != nil {
		t.Fatal(err)
	}
	pgid := r.Pid()
	// Without a group of its own the worker's child never shows up here.
	if !poll.Within(10*time.Second, func() bool { return len(groupMembers(pgid)) >= 2 }) {
		t.Fatalf("the UDF's child is not in the worker's process group %d: %v", pgid, groupMembers(pgid))
	}
	start := time.Now()
	r.Cancel()
	t.Logf("Cancel with a child holding the worker's pipes took %v", time.Since(start))
	if left := groupMembers(pgid); len(left) != 0 {
		t.Fatalf("processes of the worker's group %d still alive after Cancel: %v", pgid, left)
	}
}

func TestUnexpectedSIGKILLNamesTheOOMKiller(t *testing.T) {
	f := newFixture(t, goWorker(goworker.Serve))
	r := f.runner(int64Schema, goUDF("hungry", goworker.KillSelf))
	defer r.Cancel()
	b := f.int64Batch(1)
	_ = r.Process(context.Background(), 0, b)
	b.Release()
	results, err := flushAndTake(t, r)
	for _, res := range results {
		res.Batch.Release()
	}
	var exitErr *bridge.WorkerExitError
	if !errors.As(err, &exitErr) {
		t.Fatalf("want a WorkerExitError, got %v", err)
	}
	for _, want := range []string{"signal: killed", "OOM killer", "peak RSS"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("exit error %q lacks %q", err, want)
		}
	}
}

// startEscapedChild opens a runner of escapeSource's UDF, has it start its
// setsid child and returns the runner and the child's pid.
func startEscapedChild(t *testing.T, f *fixture, pidFile string) (*pluginrunner.Runner, int) {
	t.Helper()
	opts := f.options(int64Schema, testkit.Call(testkit.UDFSpecs(t, escapeSource)["escape"], "y", "x"))
	opts.Env = append(opts.Env, "FLINKGO_TEST_CHILD_PIDFILE="+pidFile)
	r := f.open(opts)
	b := f.int64Batch(1)
	defer b.Release()
	if err := r.Process(context.Background(), 0, b); err != nil {
		t.Fatal(err)
	}
	flushAndRelease(t, r)
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	child, err := strconv.Atoi(string(data))
	if err != nil || !testkit.Alive(child) {
		t.Fatalf("the UDF's child %q is not running", data)
	}
	if pgid, _ := syscall.Getpgid(child); pgid == groupOf(t, r.Pid()) {
		t.Fatalf("the UDF's child %d did not leave the worker's process group", child)
	}
	return r, child
}

// A process a UDF starts in a session of its own holds the worker's stdout
// and stderr and is in no group the runtime signals. The job's end, cancel
// or close, must neither wait for it (go-plugin read the pipes to their end
// first: the cancel waited until the child was killed by hand) nor leave it
// running: the worker's supervisor kills it.
func TestJobEndKillsASetsidChildOfTheUDF(t *testing.T) {
	w := pythonWorker(t)
	for _, end := range []string{"cancel", "close"} {
		t.Run(end, func(t *testing.T) {
			f := newFixture(t, w)
			r, child := startEscapedChild(t, f, filepath.Join(t.TempDir(), "child.pid"))
			defer func() { _ = syscall.Kill(child, syscall.SIGKILL) }()
			ended := make(chan error, 1)
			start := time.Now()
			go func() {
				if end == "cancel" {
					r.Cancel()
					ended <- nil
				} else {
					ended <- r.Close()
				}
			}()
			select {
			case err := <-ended:
				t.Logf("%s with a setsid child holding the worker's pipes took %v", end, time.Since(start))
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("%s waits on the UDF's setsid child %d", end, child)
			}
			if !testkit.WaitGone(child, 10*time.Second) {
				t.Fatalf("the UDF's setsid child %d outlived its worker's %s", child, end)
			}
		})
	}
}

// A runtime that is SIGKILLed runs no cleanup: the worker's supervisor,
// told by the kernel, kills the worker and the UDF's setsid child.
func TestHostDeathKillsASetsidChildOfTheUDF(t *testing.T) {
	w := pythonWorker(t)
	testkit.NoLeakedWorkers(t)
	tmp, err := os.MkdirTemp("", "host-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(tmp) })
	pidFile := filepath.Join(tmp, "child.pid")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), hostHelperEnv+"=python-setsid", "TMPDIR="+tmp,
		testkit.PythonEnv+"="+w.python, "FLINKGO_TEST_CHILD_PIDFILE="+pidFile)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var worker, child int
	if _, err := fmt.Fscan(out, &worker, &child); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("helper printed no pids: %v", err)
	}
	defer func() { _ = syscall.Kill(child, syscall.SIGKILL) }()
	if !testkit.Alive(child) {
		t.Fatalf("the UDF's child %d is not running", child)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if !testkit.WaitGone(worker, 10*time.Second) {
		_ = syscall.Kill(worker, syscall.SIGKILL)
		t.Fatalf("worker %d outlived its SIGKILLed host", worker)
	}
	if !testkit.WaitGone(child, 10*time.Second) {
		t.Fatalf("the UDF's setsid child %d outlived its SIGKILLed host", child)
	}
}

func groupOf(t *testing.T, pid int) int {
	t.Helper()
	pgid, err := syscall.Getpgid(pid)
	if err != nil {
		t.Fatal(err)
	}
	return pgid
}
