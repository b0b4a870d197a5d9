package pluginrunner_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flinkgo/flinkgo/integration/testkit"
	"github.com/flinkgo/flinkgo/internal/poll"
	"github.com/flinkgo/flinkgo/udf/bridge"
	"github.com/flinkgo/flinkgo/udf/bridge/bridgetest/goworker"
	"github.com/flinkgo/flinkgo/udf/bridge/pluginrunner"
	"github.com/flinkgo/flinkgo/udf/bridge/proto/workerpb"
)

// floodSource's UDFs write goworker.FloodBytes bytes at once, as
// goworker.Flood and goworker.FloodCrash do.
const floodSource = `
import os
import sys
from flinkgo import udf

N = 8 << 20

@udf("int64")
def flood(x):
    print("y" * N)
    sys.stderr.write("z" * N + "\n")
    return x

@udf("int64")
def flood_crash(x):
    os.write(2, b"x" * N)
    os._exit(3)
`

func floodWorkers(t *testing.T) []worker {
	goSpecs := map[string]*workerpb.UdfSpec{
		"flood":       goworker.UDF("flood", goworker.Flood, arrow.PrimitiveTypes.Int64),
		"flood_crash": goworker.UDF("flood_crash", goworker.FloodCrash, arrow.PrimitiveTypes.Int64),
	}
	g := goWorker(goworker.Serve)
	g.specs = goSpecs
	p := worker{name: "python", python: testkit.Python(t), specs: testkit.UDFSpecs(t, floodSource)}
	return []worker{g, p}
}

// Bounds a line may take once cut, with its note and prefix: far below the
// 8 MiB written.
const (
	maxKeptTailLine    = 4<<10 + 100
	maxKeptPrintedLine = 16<<10 + 100
)

// A worker that writes megabytes to stderr without a newline, then dies:
// the runner keeps a bounded tail, each line cut with a note, not the
// megabytes (issue 9, item 3).
func TestStderrTailIsBounded(t *testing.T) {
	for _, w := range floodWorkers(t) {
		t.Run(w.name, func(t *testing.T) {
			f := newFixture(t, w)
			r := f.runner(int64Schema, testkit.Call(w.specs["flood_crash"], "y", "x"))
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
			kept := 0
			for _, line := range exitErr.StderrTail {
				kept += len(line)
				if len(line) > maxKeptTailLine {
					t.Errorf("a stderr tail line of %d bytes was kept; the bound is %d", len(line), maxKeptTailLine)
				}
			}
			if !strings.Contains(strings.Join(exitErr.StderrTail, "\n"), "bytes of this line cut") {
				t.Errorf("the cut line does not say it was cut: %.200q", exitErr.StderrTail)
			}
			t.Logf("%d bytes written to stderr, %d kept in %d lines", goworker.FloodBytes, kept, len(exitErr.StderrTail))
		})
	}
}

// What a UDF prints goes to UDFOutput, prefixed with the UDF and subtask
// counted from 1, each line cut at a bound however long it is (items 3
// and 8).
func TestPrintedOutputIsPrefixedAndBounded(t *testing.T) {
	for _, w := range floodWorkers(t) {
		t.Run(w.name, func(t *testing.T) {
			f := newFixture(t, w)
			var out syncBuffer
			opts := f.options(int64Schema, testkit.Call(w.specs["flood"], "y", "x"))
			opts.Subtask = 2
			opts.UDFOutput = &out
			r := f.open(opts)
			defer r.Cancel()
			b := f.int64Batch(1)
			defer b.Release()
			if err := r.Process(context.Background(), 0, b); err != nil {
				t.Fatal(err)
			}
			flushAndRelease(t, r)
			want := 2 // stdout and stderr
			if w.name == "go" {
				want = 1 // its stderr is the worker's own (fd 2)
			}
			// Printed output travels through go-plugin's stdio stream, asynchronously.
			poll.Within(hangGuard, func() bool { return strings.Count(out.String(), "\n") >= want }) // the count is checked below
			lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
			if len(lines) != want {
				t.Fatalf("want %d printed lines, got %d: %.300q", want, len(lines), out.String())
			}
			for _, line := range lines {
				if !strings.HasPrefix(line, "[flood #3] ") {
					t.Errorf("printed line lacks the prefix [flood #3]: %.80q", line)
				}
				if len(line) > maxKeptPrintedLine || !strings.HasSuffix(line, "bytes of this line cut]") {
					t.Errorf("printed line of %d bytes, not cut at the bound with a note: …%q", len(line), line[max(0, len(line)-80):])
				}
			}
		})
	}
}

// A reused worker's printed lines carry the UDF and subtask of the runner
// that uses it now (the output itself is the runtime's, one for all).
func TestReusedWorkerPrintsUnderItsNewRunner(t *testing.T) {
	f := newFixture(t, goWorker(goworker.Serve))
	pool := pluginrunner.NewPool(nil)
	defer pool.Close()
	var out syncBuffer
	open := func(name string, subtask int) *pluginrunner.Runner {
		o := f.options(int64Schema, testkit.Call(goworker.UDF(name, goworker.Chatty, arrow.PrimitiveTypes.Int64), "y", "x"))
		o.Pool, o.IdleTimeout, o.MaxIdle = pool, time.Hour, 4
		o.Subtask, o.UDFOutput = subtask, &out
		return f.open(o)
	}
	printOne := func(r *pluginrunner.Runner, v int64, want string) {
		t.Helper()
		b := f.int64Batch(v)
		defer b.Release()
		if err := r.Process(context.Background(), 0, b); err != nil {
			t.Fatal(err)
		}
		results, err := flushAndTake(t, r)
		if err != nil {
			t.Fatal(err)
		}
		for _, res := range results {
			res.Batch.Release()
		}
		if !poll.Within(hangGuard, func() bool { return strings.Contains(out.String(), want) }) {
			t.Fatalf("output lacks %q: %q", want, out.String())
		}
	}
	first := open("loud", 0)
	pid := first.Pid()
	printOne(first, 1, "[loud #1] printed by the udf 1\n")
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	second := open("quiet", 4)
	defer func() {
		if err := second.Close(); err != nil {
			t.Error(err)
		}
	}()
	if second.Pid() != pid {
		t.Fatalf("the worker was not reused (%d, then %d)", pid, second.Pid())
	}
	printOne(second, 2, "[quiet #5] printed by the udf 2\n")
	if strings.Contains(out.String(), "[loud #1] printed by the udf 2") {
		t.Errorf("the reused worker's line carries the first runner's tag: %q", out.String())
	}
}

// What a UDF writes to fds 1 and 2 themselves (a C extension, a subprocess)
// reaches the host as print does, and so does a last line without a newline.
func TestOutputWrittenToTheFdsAndAFinalPartialLineReachTheHost(t *testing.T) {
	f := newFixture(t, pythonWorker(t))
	var logs syncBuffer
	opts := f.options(int64Schema, testkit.Call(testkit.UDFSpecs(t, `
import os, subprocess
from flinkgo import udf

@udf("int64")
def fd_writer(x):
    os.write(1, b"written to fd 1\n")
    os.write(2, b"written to fd 2\n")
    subprocess.run(["echo", "echoed by a subprocess"], check=True)
    print("the last words, without a newline", end="")
    return x
`)["fd_writer"], "y", "x"))
	opts.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	r := f.open(opts)
	b := f.int64Batch(1)
	defer b.Release()
	if err := r.Process(context.Background(), 0, b); err != nil {
		t.Fatal(err)
	}
	flushAndRelease(t, r)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	out := logs.String()
	for _, want := range []string{
		`msg="udf stdout" udf=fd_writer`,
		`line="written to fd 1"`,
		`line="written to fd 2"`,
		`line="echoed by a subprocess"`,
		`line="the last words, without a newline"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("logs lack %q:\n%s", want, out)
		}
	}
}

// A worker that crashes in C code loses the thread that forwards its fd 2:
// the crash's traceback still reaches the exit error's stderr lines.
func TestACrashedWorkersTracebackReachesTheExitError(t *testing.T) {
	f := newFixture(t, pythonWorker(t))
	r := f.runner(int64Schema, testkit.Call(testkit.UDFSpecs(t, `
import ctypes
from flinkgo import udf

@udf("int64")
def crash(x):
    ctypes.string_at(0)
    return x
`)["crash"], "y", "x"))
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
	for _, want := range []string{"Fatal Python error: Segmentation fault", "in crash"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("exit error lacks %q:\n%v", want, err)
		}
	}
}
