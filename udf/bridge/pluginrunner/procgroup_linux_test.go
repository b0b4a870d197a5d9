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
	"slices"
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
// setsid child and double-forked grandchild and returns the runner and their
// pids. env is added to the worker's environment.
func startEscapedChild(t *testing.T, f *fixture, pidFile string, env ...string) (*pluginrunner.Runner, int, int) {
	t.Helper()
	opts := f.options(int64Schema, testkit.Call(testkit.UDFSpecs(t, escapeSource)["escape"], "y", "x"))
	opts.Env = append(opts.Env, "FLINKGO_TEST_CHILD_PIDFILE="+pidFile)
	opts.Env = append(opts.Env, env...)
	r := f.open(opts)
	t.Cleanup(r.Cancel)
	b := f.int64Batch(1)
	defer b.Release()
	if err := r.Process(context.Background(), 0, b); err != nil {
		t.Fatal(err)
	}
	flushAndRelease(t, r)
	child, grandchild, err := readEscapedPids(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(child, syscall.SIGKILL)
		_ = syscall.Kill(grandchild, syscall.SIGKILL)
	})
	for _, pid := range []int{child, grandchild} {
		if !testkit.Alive(pid) {
			t.Fatalf("the UDF's process %d is not running", pid)
		}
	}
	if pgid, _ := syscall.Getpgid(child); pgid == groupOf(t, r.Pid()) {
		t.Fatalf("the UDF's child %d did not leave the worker's process group", child)
	}
	return r, child, grandchild
}

// The two ways the worker's supervisor holds what the UDFs start: a cgroup
// of the worker's own where one can be created, else its child subreaper
// alone (FLINKGO_WORKER_CGROUP=0 forces it where cgroups work).
var supervisions = []string{"cgroup", "subreaper"}

// supervisionEnv returns the worker environment for a supervision; for
// "cgroup" it skips the test where this process cannot create a cgroup.
func supervisionEnv(t *testing.T, supervision string) []string {
	t.Helper()
	if supervision == "subreaper" {
		return []string{"FLINKGO_WORKER_CGROUP=0"}
	}
	cgroupParent(t)
	return nil
}

// cgroupParent returns the directory of this process's cgroup v2, under
// which a worker's supervisor creates the worker's cgroup, after checking
// that a cgroup can be created there. It skips the test, naming why, where
// none can, and fails under FLINKGO_REQUIRE_PYTHON=1 where one should: as
// root on Linux with cgroup2 mounted read-write (CI).
func cgroupParent(t *testing.T) string {
	t.Helper()
	dir, mountOptions, why := ownCgroup2Dir()
	if why == "" {
		probe := filepath.Join(dir, fmt.Sprintf("flinkgo-probe-%d", os.Getpid()))
		if err := os.Mkdir(probe, 0o755); err != nil {
			why = err.Error()
		} else if err := os.Remove(probe); err != nil {
			t.Fatalf("removing the probe cgroup: %v", err)
		}
	}
	if why == "" {
		return dir
	}
	readWrite := slices.Contains(strings.Split(mountOptions, ","), "rw")
	if os.Getenv("FLINKGO_REQUIRE_PYTHON") == "1" && os.Geteuid() == 0 && readWrite {
		t.Fatalf("root with cgroup2 mounted read-write cannot create a cgroup: %s", why)
	}
	t.Skipf("this process cannot create a cgroup, so its workers use the subreaper alone: %s", why)
	return ""
}

// ownCgroup2Dir finds this process's cgroup v2 directory and the cgroup2
// mount's options, or says why there is none.
func ownCgroup2Dir() (dir, mountOptions, why string) {
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", "", err.Error()
	}
	path, found := "", false
	for _, line := range strings.Split(string(self), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			path, found = p, true
		}
	}
	if !found {
		return "", "", "no cgroup v2 (unified) hierarchy in /proc/self/cgroup"
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", "", err.Error()
	}
	for _, line := range strings.Split(string(mounts), "\n") {
		before, after, _ := strings.Cut(line, " - ")
		fields := strings.Fields(before)
		if strings.HasPrefix(after, "cgroup2 ") && len(fields) > 5 && fields[3] == "/" {
			return filepath.Join(fields[4], path), fields[5], ""
		}
	}
	return "", "", "cgroup2 is not mounted"
}

// cgroupOf returns pid's cgroup v2 path ("/a/b"), or "" once it is gone.
func cgroupOf(pid int) string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(data), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			return p
		}
	}
	return ""
}

// checkInWorkerCgroup fails unless the worker is in a cgroup its supervisor
// created for it, under this process's, and the pids are in it too; it
// returns the cgroup's directory.
func checkInWorkerCgroup(t *testing.T, worker int, pids ...int) string {
	t.Helper()
	parent := cgroupParent(t)
	want := cgroupOf(worker)
	wantPrefix := strings.TrimSuffix(cgroupOf(os.Getpid()), "/") + "/flinkgo-worker-"
	if !strings.HasPrefix(want, wantPrefix) {
		t.Fatalf("worker %d is in cgroup %q, not one of its own under %q", worker, want, wantPrefix)
	}
	for _, pid := range pids {
		if got := cgroupOf(pid); got != want {
			t.Fatalf("the UDF's process %d is in cgroup %q, not the worker's %q", pid, got, want)
		}
	}
	return filepath.Join(parent, filepath.Base(want))
}

// checkCgroupRemoved fails if the worker's cgroup directory is still there.
func checkCgroupRemoved(t *testing.T, dir string) {
	t.Helper()
	if !poll.Within(10*time.Second, func() bool {
		_, err := os.Stat(dir)
		return errors.Is(err, os.ErrNotExist)
	}) {
		t.Fatalf("the worker's cgroup %s is left behind", dir)
	}
}

// A process a UDF starts in a session of its own holds the worker's stdout
// and stderr and is in no group the runtime signals. The job's end, cancel
// or close, must neither wait for it (go-plugin read the pipes to their end
// first: the cancel waited until the child was killed by hand) nor leave it
// or a double-forked grandchild running: the worker's supervisor kills them,
// through the worker's cgroup where there is one, and removes the cgroup.
func TestJobEndKillsASetsidChildOfTheUDF(t *testing.T) {
	w := pythonWorker(t)
	for _, supervision := range supervisions {
		for _, end := range []string{"cancel", "close"} {
			t.Run(supervision+"/"+end, func(t *testing.T) {
				env := supervisionEnv(t, supervision)
				f := newFixture(t, w)
				r, child, grandchild := startEscapedChild(t, f, filepath.Join(t.TempDir(), "child.pid"), env...)
				cgroupDir := ""
				if supervision == "cgroup" {
					cgroupDir = checkInWorkerCgroup(t, r.Pid(), child, grandchild)
				}
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
				if !testkit.WaitGone(grandchild, 10*time.Second) {
					t.Fatalf("the UDF's double-forked grandchild %d outlived its worker's %s", grandchild, end)
				}
				if cgroupDir != "" {
					checkCgroupRemoved(t, cgroupDir)
				}
			})
		}
	}
}

// A runtime that is SIGKILLed runs no cleanup: the worker's supervisor,
// told by the kernel, kills the worker, the UDF's setsid child and its
// double-forked grandchild, and removes the worker's cgroup.
func TestHostDeathKillsASetsidChildOfTheUDF(t *testing.T) {
	w := pythonWorker(t)
	for _, supervision := range supervisions {
		t.Run(supervision, func(t *testing.T) {
			env := supervisionEnv(t, supervision)
			testHostDeathKillsASetsidChild(t, w, supervision, env)
		})
	}
}

func testHostDeathKillsASetsidChild(t *testing.T, w worker, supervision string, env []string) {
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
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	var worker, child, grandchild int
	if _, err := fmt.Fscan(out, &worker, &child, &grandchild); err != nil {
		t.Fatalf("helper printed no pids: %v", err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(child, syscall.SIGKILL)
		_ = syscall.Kill(grandchild, syscall.SIGKILL)
	})
	for _, pid := range []int{child, grandchild} {
		if !testkit.Alive(pid) {
			t.Fatalf("the UDF's process %d is not running", pid)
		}
	}
	cgroupDir := ""
	if supervision == "cgroup" {
		cgroupDir = checkInWorkerCgroup(t, worker, child, grandchild)
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
	if !testkit.WaitGone(grandchild, 10*time.Second) {
		t.Fatalf("the UDF's double-forked grandchild %d outlived its SIGKILLed host", grandchild)
	}
	if cgroupDir != "" {
		checkCgroupRemoved(t, cgroupDir)
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
