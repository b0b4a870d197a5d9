//go:build linux

package pluginrunner_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flinkgo/flinkgo/udf/bridge"
	"github.com/flinkgo/flinkgo/udf/bridge/bridgetest/goworker"
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
	for deadline := time.Now().Add(10 * time.Second); len(groupMembers(pgid)) < 2; {
		if time.Now().After(deadline) {
			t.Fatalf("the UDF's child is not in the worker's process group %d: %v", pgid, groupMembers(pgid))
		}
		time.Sleep(5 * time.Millisecond)
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
