package pluginrunner_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/proto"

	"github.com/flinkgo/flinkgo/integration/testkit"
	"github.com/flinkgo/flinkgo/internal/poll"
	"github.com/flinkgo/flinkgo/udf/bridge"
	"github.com/flinkgo/flinkgo/udf/bridge/bridgetest/goworker"
	"github.com/flinkgo/flinkgo/udf/bridge/pluginrunner"
	"github.com/flinkgo/flinkgo/udf/bridge/proto/workerpb"
)

// hostHelperEnv makes the test binary act as a host that starts a worker
// (its value names which: "python" or "go"), prints its pid and waits to be
// killed (see TestHostDeathLeavesNoWorker).
const hostHelperEnv = "FLINKGO_TEST_HOST_HELPER"

func TestMain(m *testing.M) {
	// First: the Go worker is this binary, started with goworker.Env (and,
	// under the host helper, with hostHelperEnv inherited too).
	goworker.Main()
	if w := os.Getenv(hostHelperEnv); w != "" {
		runHostHelper(w)
		return
	}
	goleak.VerifyTestMain(m)
}

const udfSource = `
import time
import pyarrow as pa
import pyarrow.compute as pc
from flinkgo import udf

@udf("float64", func_type="pandas")
def affine(x):
    return x * 2 + 1

@udf("string")
def upper(s):
    return None if s is None else s.upper()

@udf("int64", func_type="arrow")
def plus_one(x):
    return pc.add(x, 1)

@udf("int64")
def boom(x):
    if x == 3:
        raise ZeroDivisionError("three is not allowed")
    return x

@udf("int64")
def sleepy(x):
    time.sleep(1000)
    return x

@udf("int64", func_type="pandas")
def too_short(x):
    return x.iloc[:1]

@udf("int64")
def wrong_type(x):
    return "not a number"
`

// goUDFs are the Go worker's counterparts of udfSource's UDFs, by the same
// names, so one test body runs against either worker.
var goUDFs = map[string]*workerpb.UdfSpec{
	"affine":     goworker.UDF("affine", goworker.Affine, arrow.PrimitiveTypes.Float64),
	"upper":      goworker.UDF("upper", goworker.Upper, arrow.BinaryTypes.String),
	"plus_one":   goworker.UDF("plus_one", goworker.AddOne, arrow.PrimitiveTypes.Int64),
	"boom":       goworker.UDF("boom", goworker.FailOn(3), arrow.PrimitiveTypes.Int64),
	"sleepy":     goworker.UDF("sleepy", goworker.Hang, arrow.PrimitiveTypes.Int64),
	"too_short":  goworker.UDF("too_short", goworker.ShortResult, arrow.PrimitiveTypes.Int64),
	"wrong_type": goworker.UDF("wrong_type", goworker.WrongType, arrow.PrimitiveTypes.Int64),
	"wrong_seq":  goworker.UDF("wrong_seq", goworker.WrongSeq, arrow.PrimitiveTypes.Int64),
	"bad_arrow":  goworker.UDF("bad_arrow", goworker.BadArrow, arrow.PrimitiveTypes.Int64),
	"crafted":    goworker.UDF("crafted", goworker.CraftedArrow, arrow.BinaryTypes.String),
	"ident":      goworker.UDF("ident", goworker.Identity, arrow.PrimitiveTypes.Int64),
	"chatty":     goworker.UDF("chatty", goworker.Chatty, arrow.PrimitiveTypes.Int64),
}

// worker is one implementation of the worker side of the protocol: the
// Python worker, or the Go worker of package goworker.
type worker struct {
	name string
	// python and env start it (Options.Python, Options.Env).
	python string
	env    []string
	// specs holds udfSource's UDFs, by name.
	specs map[string]*workerpb.UdfSpec
}

func goWorker(start goworker.Start) worker {
	python, env := goworker.Command(start)
	return worker{name: "go", python: python, env: env, specs: goUDFs}
}

// pythonWorker skips the test when no Python with flinkgo is installed.
func pythonWorker(t *testing.T) worker {
	t.Helper()
	return worker{name: "python", python: testkit.Python(t), specs: testkit.UDFSpecs(t, udfSource)}
}

// eachWorker runs test against the Go worker, then the Python worker.
func eachWorker(t *testing.T, test func(t *testing.T, w worker)) {
	t.Run("go", func(t *testing.T) { test(t, goWorker(goworker.Serve)) })
	t.Run("python", func(t *testing.T) { test(t, pythonWorker(t)) })
}

type fixture struct {
	t         *testing.T
	mem       *memory.CheckedAllocator
	w         worker
	specs     map[string]*workerpb.UdfSpec
	transport pluginrunner.Transport
}

// eachTransport runs test once per batch-stream transport.
func eachTransport(t *testing.T, test func(t *testing.T, transport pluginrunner.Transport)) {
	for _, tr := range []pluginrunner.Transport{pluginrunner.TransportUnixSocket, pluginrunner.TransportSharedMemory, pluginrunner.TransportGRPCStream} {
		t.Run(tr.String(), func(t *testing.T) { test(t, tr) })
	}
}

func newFixture(t *testing.T, w worker) *fixture {
	t.Helper()
	testkit.NoLeakedWorkers(t)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	return &fixture{t: t, mem: mem, w: w, specs: w.specs}
}

// options are the runner options of the fixture's worker and transport.
func (f *fixture) options(schema *arrow.Schema, calls ...*workerpb.UdfCall) pluginrunner.Options {
	return pluginrunner.Options{
		Calls:        calls,
		InputSchema:  schema,
		Python:       f.w.python,
		Env:          f.w.env,
		Allocator:    f.mem,
		OperatorName: "test",
		Transport:    f.transport,
		Logger:       slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
}

func (f *fixture) runner(schema *arrow.Schema, calls ...*workerpb.UdfCall) *pluginrunner.Runner {
	f.t.Helper()
	return f.open(f.options(schema, calls...))
}

func (f *fixture) open(opts pluginrunner.Options) *pluginrunner.Runner {
	f.t.Helper()
	r, err := pluginrunner.NewRunner(opts)
	if err != nil {
		f.t.Fatal(err)
	}
	if err := r.Open(context.Background()); err != nil {
		f.t.Fatal(err)
	}
	return r
}

var int64Schema = arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)

func (f *fixture) int64Batch(values ...int64) arrow.RecordBatch {
	b := array.NewRecordBuilder(f.mem, int64Schema)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues(values, nil)
	return b.NewRecordBatch()
}

// flushAndTake flushes and returns every queued result, as the operator does.
func flushAndTake(t *testing.T, r bridge.Runner) ([]bridge.Result, error) {
	t.Helper()
	if err := r.Flush(); err != nil {
		return nil, err
	}
	var out []bridge.Result
	for {
		res, ok, err := r.TryTakeResult()
		if err != nil {
			return out, err
		}
		if !ok {
			return out, nil
		}
		out = append(out, res)
	}
}

// flushAndRelease flushes, failing the test on an error, and releases
// every result.
func flushAndRelease(t *testing.T, r bridge.Runner) {
	t.Helper()
	results, err := flushAndTake(t, r)
	if err != nil {
		t.Fatal(err)
	}
	for _, res := range results {
		res.Batch.Release()
	}
}

func TestPandasArrowAndGeneralUDFs(t *testing.T) {
	eachWorker(t, func(t *testing.T, w worker) {
		eachTransport(t, func(t *testing.T, tr pluginrunner.Transport) { testPandasArrowAndGeneralUDFs(t, w, tr) })
	})
}

func testPandasArrowAndGeneralUDFs(t *testing.T, w worker, transport pluginrunner.Transport) {
	f := newFixture(t, w)
	f.transport = transport
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "x", Type: arrow.PrimitiveTypes.Float64},
		{Name: "n", Type: arrow.PrimitiveTypes.Int64},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	r := f.runner(schema,
		testkit.Call(f.specs["affine"], "y", "x"),
		testkit.Call(f.specs["plus_one"], "m", "n"),
		testkit.Call(f.specs["upper"], "u", "s"),
	)
	defer func() {
		if err := r.Close(); err != nil {
			t.Error(err)
		}
	}()

	b := array.NewRecordBuilder(f.mem, schema)
	b.Field(0).(*array.Float64Builder).AppendValues([]float64{0, 1.5, -2}, nil)
	b.Field(1).(*array.Int64Builder).AppendValues([]int64{1, 2, 3}, nil)
	b.Field(2).(*array.StringBuilder).AppendValues([]string{"ab", "", "Cd"}, []bool{true, false, true})
	batch := b.NewRecordBatch()
	b.Release()
	defer batch.Release()

	for seq := int64(0); seq < 3; seq++ {
		if err := r.Process(context.Background(), seq, batch); err != nil {
			t.Fatal(err)
		}
	}
	results, err := flushAndTake(t, r)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 3 {
		t.Fatalf("got %d results, want 3", len(results))
	}
	for i, res := range results {
		if res.Seq != int64(i) {
			t.Errorf("result %d has seq %d", i, res.Seq)
		}
		y := res.Batch.Column(0).(*array.Float64)
		m := res.Batch.Column(1).(*array.Int64)
		u := res.Batch.Column(2).(*array.String)
		got := fmt.Sprintf("%v %v %s %v %s", y.Float64Values(), m.Int64Values(), u.Value(0), u.IsNull(1), u.Value(2))
		if got != "[1 4 -3] [2 3 4] AB true CD" {
			t.Errorf("result %d = %s", i, got)
		}
		res.Batch.Release()
	}
}

func TestUDFExceptionCarriesTraceback(t *testing.T) {
	eachWorker(t, testUDFExceptionCarriesTraceback)
}

func testUDFExceptionCarriesTraceback(t *testing.T, w worker) {
	f := newFixture(t, w)
	r := f.runner(int64Schema, testkit.Call(f.specs["boom"], "y", "x"))
	defer r.Cancel()
	ok := f.int64Batch(1, 2)
	bad := f.int64Batch(4, 3)
	defer ok.Release()
	defer bad.Release()
	_ = r.Process(context.Background(), 0, ok)
	_ = r.Process(context.Background(), 1, bad)
	results, err := flushAndTake(t, r)
	for _, res := range results {
		res.Batch.Release()
	}
	var udfErr *bridge.UDFError
	if !errors.As(err, &udfErr) {
		t.Fatalf("want a *bridge.UDFError, got %v", err)
	}
	// What the worker reports of the failure: Python's exception and
	// traceback, or the Go worker's error.
	wantType, wantTraceback := "ZeroDivisionError", []string{"Traceback (most recent call last)", "udfs.py\", line 22, in boom", `raise ZeroDivisionError("three is not allowed")`}
	if w.name == "go" {
		wantType, wantTraceback = goworker.ErrorType, []string{`goworker: udf "boom": value 3 is not allowed`}
	}
	if udfErr.UDF != "boom" || udfErr.Seq != 1 || udfErr.Type != wantType {
		t.Errorf("error fields: %+v", udfErr)
	}
	for _, want := range wantTraceback {
		if !strings.Contains(udfErr.Traceback, want) {
			t.Errorf("traceback lacks %q:\n%s", want, udfErr.Traceback)
		}
	}
	if !strings.Contains(err.Error(), `udf "boom"`) {
		t.Errorf("message does not name the UDF: %v", err)
	}
	// The runner refuses work after it failed.
	if err := r.Process(context.Background(), 2, ok); err == nil {
		t.Error("Process after failure succeeded")
	}
}

func TestWrongResultShapeIsNamed(t *testing.T) {
	eachWorker(t, testWrongResultShapeIsNamed)
}

func testWrongResultShapeIsNamed(t *testing.T, w worker) {
	f := newFixture(t, w)
	// The Python worker checks its UDFs' results itself; the Go worker
	// passes them on, so the runner's own checks catch them.
	cases := map[string]string{
		"too_short":  "returned 1 rows for a batch of 3 rows",
		"wrong_type": "do not convert to its declared return type int64",
	}
	if w.name == "go" {
		cases = map[string]string{
			"too_short":  "batch 0 had 3 rows but its result has 1",
			"wrong_type": `column "y" is utf8, declared int64`,
			"wrong_seq":  "got the result of batch 1 while batch 0 was next",
			"bad_arrow":  "result of batch 0 is not a valid Arrow IPC stream",
			// Well-formed IPC with offsets going backwards: validated in full.
			"crafted": `result of batch 0 is not a valid Arrow IPC stream: invalid Arrow data: column "y"`,
		}
	}
	for name, want := range cases {
		t.Run(name, func(t *testing.T) {
			r := f.runner(int64Schema, testkit.Call(f.specs[name], "y", "x"))
			defer r.Cancel()
			b := f.int64Batch(1, 2, 3)
			defer b.Release()
			_ = r.Process(context.Background(), 0, b)
			_, err := flushAndTake(t, r)
			if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), name) {
				t.Fatalf("want an error naming %s with %q, got %v", name, want, err)
			}
			if w.name == "go" && !errors.Is(err, bridge.ErrResultMismatch) {
				t.Errorf("want an error wrapping ErrResultMismatch, got %v", err)
			}
		})
	}
}

func TestWorkerKilledMidBundle(t *testing.T) {
	eachWorker(t, func(t *testing.T, w worker) {
		eachTransport(t, func(t *testing.T, tr pluginrunner.Transport) { testWorkerKilledMidBundle(t, w, tr) })
	})
}

func testWorkerKilledMidBundle(t *testing.T, w worker, transport pluginrunner.Transport) {
	f := newFixture(t, w)
	f.transport = transport
	r := f.runner(int64Schema, testkit.Call(f.specs["sleepy"], "y", "x"))
	defer r.Cancel()
	b := f.int64Batch(1)
	defer b.Release()
	if err := r.Process(context.Background(), 0, b); err != nil {
		t.Fatal(err)
	}
	pid := r.Pid()
	flushed := make(chan error, 1)
	go func() { flushed <- r.Flush() }()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err := <-flushed
	var exitErr *bridge.WorkerExitError
	if !errors.As(err, &exitErr) || !errors.Is(err, bridge.ErrWorkerLost) {
		t.Fatalf("want a WorkerExitError, got %v", err)
	}
	if exitErr.Pid != pid || exitErr.Status != "signal: killed" {
		t.Errorf("exit error: %+v", exitErr)
	}
	if !strings.Contains(err.Error(), `udf "sleepy"`) {
		t.Errorf("message does not name the UDF: %v", err)
	}
}

func TestCancelDoesNotWaitForHungWorker(t *testing.T) {
	eachWorker(t, func(t *testing.T, w worker) {
		eachTransport(t, func(t *testing.T, tr pluginrunner.Transport) { testCancelDoesNotWaitForHungWorker(t, w, tr) })
	})
}

func testCancelDoesNotWaitForHungWorker(t *testing.T, w worker, transport pluginrunner.Transport) {
	for _, how := range []string{"sleep", "sigstop"} {
		t.Run(how, func(t *testing.T) {
			f := newFixture(t, w)
			f.transport = transport
			r := f.runner(int64Schema, testkit.Call(f.specs["sleepy"], "y", "x"))
			b := f.int64Batch(1)
			defer b.Release()
			if err := r.Process(context.Background(), 0, b); err != nil {
				t.Fatal(err)
			}
			pid := r.Pid()
			if how == "sigstop" {
				if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
					t.Fatal(err)
				}
			}
			flushed := make(chan error, 1)
			go func() { flushed <- r.Flush() }()

			canceled := make(chan struct{})
			go func() { r.Cancel(); close(canceled) }()
			select {
			case <-canceled:
			case <-time.After(30 * time.Second):
				t.Fatal("Cancel did not return")
			}
			if err := <-flushed; !errors.Is(err, bridge.ErrClosed) {
				t.Errorf("blocked Flush returned %v, want ErrClosed", err)
			}
			if testkit.Alive(pid) {
				t.Errorf("worker %d still alive after Cancel", pid)
			}
			if err := r.Process(context.Background(), 1, b); !errors.Is(err, bridge.ErrClosed) {
				t.Errorf("Process after Cancel: %v, want ErrClosed", err)
			}
		})
	}
}

func TestCloseIsIdempotentAndRefusesWork(t *testing.T) {
	eachWorker(t, testCloseIsIdempotentAndRefusesWork)
}

func testCloseIsIdempotentAndRefusesWork(t *testing.T, w worker) {
	f := newFixture(t, w)
	r := f.runner(int64Schema, testkit.Call(f.specs["plus_one"], "y", "x"))
	pid := r.Pid()
	errs := make(chan error, 2)
	go func() { errs <- r.Close() }()
	go func() { errs <- r.Close() }()
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if testkit.Alive(pid) {
		t.Errorf("worker %d alive after Close", pid)
	}
	b := f.int64Batch(1)
	defer b.Release()
	if err := r.Process(context.Background(), 0, b); !errors.Is(err, bridge.ErrClosed) {
		t.Errorf("Process after Close: %v", err)
	}
}

func TestStartFailureIsClear(t *testing.T) {
	// The interpreter is missing, so the spec is never read: the Go
	// worker's will do.
	r, err := pluginrunner.NewRunner(pluginrunner.Options{
		Calls:       []*workerpb.UdfCall{testkit.Call(goUDFs["plus_one"], "y", "x")},
		InputSchema: int64Schema,
		Python:      "/nonexistent/python3",
		Logger:      slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	err = r.Open(context.Background())
	if !errors.Is(err, bridge.ErrWorkerStart) || !strings.Contains(err.Error(), "/nonexistent/python3") {
		t.Fatalf("want ErrWorkerStart naming the interpreter, got %v", err)
	}
}

func TestHostDeathLeavesNoWorker(t *testing.T) {
	eachWorker(t, testHostDeathLeavesNoWorker)
}

func testHostDeathLeavesNoWorker(t *testing.T, w worker) {
	testkit.NoLeakedWorkers(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	// The killed host cannot remove go-plugin's socket directory: keep it in
	// one the test removes (short: a socket path is at most 107 bytes).
	tmp, err := os.MkdirTemp("", "host-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(tmp) })
	cmd.Env = append(os.Environ(), hostHelperEnv+"="+w.name, "TMPDIR="+tmp)
	if w.name == "python" {
		cmd.Env = append(cmd.Env, testkit.PythonEnv+"="+w.python)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	n, err := out.Read(buf)
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("helper printed no pid: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(buf[:n])))
	if err != nil || !testkit.Alive(pid) {
		t.Fatalf("helper printed %q", buf[:n])
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if !testkit.WaitGone(pid, 10*time.Second) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("worker %d outlived its host", pid)
	}
}

// runHostHelper starts a worker ("python" or "go"), prints its pid and
// blocks until killed.
func runHostHelper(which string) {
	opts := pluginrunner.Options{InputSchema: int64Schema, Logger: slog.New(slog.DiscardHandler)}
	if which == "go" {
		w := goWorker(goworker.Serve)
		opts.Python, opts.Env = w.python, w.env
		opts.Calls = []*workerpb.UdfCall{testkit.Call(w.specs["ident"], "y", "x")}
	} else if which == "python-setsid" {
		opts.Calls = []*workerpb.UdfCall{testkit.Call(testkit.UDFSpecs(&helperT{}, escapeSource)["escape"], "y", "x")}
		opts.Env = []string{"FLINKGO_TEST_CHILD_PIDFILE=" + os.Getenv("FLINKGO_TEST_CHILD_PIDFILE")}
	} else {
		src := `
from flinkgo import udf

@udf("int64")
def ident(x):
    return x
`
		specs := testkit.UDFSpecs(&helperT{}, src)
		opts.Calls = []*workerpb.UdfCall{testkit.Call(specs["ident"], "y", "x")}
	}
	r, err := pluginrunner.NewRunner(opts)
	if err == nil {
		err = r.Open(context.Background())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if which == "python-setsid" {
		child, grandchild, err := runEscapeOnce(r)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println(r.Pid(), child, grandchild)
		select {}
	}
	fmt.Println(r.Pid())
	select {}
}

// escapeSource's UDF starts, once, a process that leaves the worker's
// session and process group and sleeps forever, holding the worker's stdout
// and stderr, and a double-forked grandchild (its parent, a shell, exits at
// once, so it is orphaned), and writes their pids, "child grandchild", to the
// file $FLINKGO_TEST_CHILD_PIDFILE.
const escapeSource = `
import os, subprocess, sys
from flinkgo import udf

@udf("int64")
def escape(x):
    path = os.environ["FLINKGO_TEST_CHILD_PIDFILE"]
    if not os.path.exists(path):
        child = subprocess.Popen(
            [sys.executable, "-c", "import time\nwhile True: time.sleep(1000)"],
            start_new_session=True,
        )
        shell = subprocess.run(
            ["sh", "-c", "sleep 100000 </dev/null >/dev/null 2>&1 & echo $!"],
            capture_output=True, check=True, text=True,
        )
        with open(path + ".tmp", "w") as f:
            f.write(f"{child.pid} {shell.stdout.strip()}")
        os.rename(path + ".tmp", path)
    return x
`

// readEscapedPids reads the pids escapeSource's UDF wrote.
func readEscapedPids(path string) (child, grandchild int, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, err
	}
	if _, err := fmt.Sscan(string(data), &child, &grandchild); err != nil {
		return 0, 0, fmt.Errorf("pid file %s holds %q: %w", path, data, err)
	}
	return child, grandchild, nil
}

// runEscapeOnce has escapeSource's UDF start its setsid child and
// double-forked grandchild and returns their pids.
func runEscapeOnce(r *pluginrunner.Runner) (int, int, error) {
	b := array.NewRecordBuilder(memory.NewGoAllocator(), int64Schema)
	b.Field(0).(*array.Int64Builder).Append(1)
	batch := b.NewRecordBatch()
	b.Release()
	defer batch.Release()
	if err := r.Process(context.Background(), 0, batch); err != nil {
		return 0, 0, err
	}
	if err := r.Flush(); err != nil {
		return 0, 0, err
	}
	for {
		res, ok, err := r.TryTakeResult()
		if err != nil {
			return 0, 0, err
		}
		if !ok {
			break
		}
		res.Batch.Release()
	}
	return readEscapedPids(os.Getenv("FLINKGO_TEST_CHILD_PIDFILE"))
}

// helperT lets testkit run outside a test, in the helper process.
type helperT struct{ testing.TB }

func (*helperT) Helper() {}
func (*helperT) TempDir() string {
	dir, err := os.MkdirTemp("", "flinkgo-helper-")
	if err != nil {
		panic(err)
	}
	return dir
}
func (*helperT) Fatal(args ...any) { fmt.Fprintln(os.Stderr, args...); os.Exit(1) }
func (*helperT) Fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(1)
}

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestWorkerOutputReachesLogsTagged(t *testing.T) {
	eachWorker(t, testWorkerOutputReachesLogsTagged)
}

func testWorkerOutputReachesLogsTagged(t *testing.T, w worker) {
	testkit.NoLeakedWorkers(t)
	specs := w.specs
	if w.name == "python" {
		specs = testkit.UDFSpecs(t, `
import sys
from flinkgo import udf

@udf("int64")
def chatty(x):
    print("printed by the udf", x)
    sys.stderr.write("written to stderr by the udf\n")
    return x
`)
	}
	var logs syncBuffer
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	r, err := pluginrunner.NewRunner(pluginrunner.Options{
		Calls:        []*workerpb.UdfCall{testkit.Call(specs["chatty"], "y", "x")},
		InputSchema:  int64Schema,
		Python:       w.python,
		Env:          w.env,
		Allocator:    mem,
		OperatorName: "op7",
		Subtask:      3,
		Logger:       slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, mem: mem}
	b := f.int64Batch(42)
	defer b.Release()
	if err := r.Process(context.Background(), 0, b); err != nil {
		t.Fatal(err)
	}
	flushAndRelease(t, r)
	// stdout travels through go-plugin's stdio stream, asynchronously.
	poll.Within(20*time.Second, func() bool { return strings.Contains(logs.String(), "printed by the udf 42") }) // checked below
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	out := logs.String()
	for _, want := range []string{
		`msg="udf stdout" udf=chatty operator=op7 subtask=3 source=worker`,
		`line="printed by the udf 42"`,
		"written to stderr by the udf",
		`msg="udf chain opened" udf=chatty operator=op7 subtask=3 source=worker`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("logs lack %q:\n%s", want, out)
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if (strings.Contains(line, "written to stderr by the udf") || strings.Contains(line, "printed by the udf")) &&
			!strings.Contains(line, "udf=chatty operator=op7 subtask=3") {
			t.Errorf("stderr line not tagged with the UDF: %s", line)
		}
	}
}

func TestMapBatchesReturnsAnyNumberOfRows(t *testing.T) {
	t.Run("go", func(t *testing.T) {
		f := newFixture(t, goWorker(goworker.Serve))
		spec := goworker.MapBatches("twice", goworker.Repeat, int64Schema)
		r := f.runner(int64Schema, &workerpb.UdfCall{Udf: spec})
		defer func() {
			if err := r.Close(); err != nil {
				t.Error(err)
			}
		}()
		b := f.int64Batch(1, 2, 3)
		defer b.Release()
		if err := r.Process(context.Background(), 0, b); err != nil {
			t.Fatal(err)
		}
		results, err := flushAndTake(t, r)
		if err != nil {
			t.Fatal(err)
		}
		if len(results) != 1 {
			t.Fatalf("%d results", len(results))
		}
		defer results[0].Batch.Release()
		if got := fmt.Sprint(results[0].Batch.Column(0)); got != "[1 2 3 1 2 3]" {
			t.Errorf("map_batches result %s", got)
		}
	})
	t.Run("python", testMapBatchesReturnsAnyNumberOfRowsPython)
}

func testMapBatchesReturnsAnyNumberOfRowsPython(t *testing.T) {
	f := newFixture(t, pythonWorker(t))
	specs := testkit.UDFSpecs(t, `
import pandas as pd
from flinkgo import udf

@udf("int64", func_type="pandas")
def twice_big(df):
    big = df[df["x"] > 1]
    return pd.DataFrame({"x": pd.concat([big["x"], big["x"]]), "tag": "big"})
`)
	spec := proto.Clone(specs["twice_big"]).(*workerpb.UdfSpec)
	spec.FuncType = workerpb.FuncType_FUNC_TYPE_PANDAS_BATCH
	out := arrow.NewSchema([]arrow.Field{
		{Name: "x", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "tag", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(out))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	spec.ReturnSchema = buf.Bytes()
	r := f.runner(int64Schema, &workerpb.UdfCall{Udf: spec})
	defer func() {
		if err := r.Close(); err != nil {
			t.Error(err)
		}
	}()
	b := f.int64Batch(1, 2, 3)
	defer b.Release()
	if err := r.Process(context.Background(), 0, b); err != nil {
		t.Fatal(err)
	}
	results, err := flushAndTake(t, r)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 1 {
		t.Fatalf("%d results", len(results))
	}
	defer results[0].Batch.Release()
	got := fmt.Sprintf("%v %v", results[0].Batch.Column(0), results[0].Batch.Column(1))
	if got != `[2 3 2 3] ["big" "big" "big" "big"]` {
		t.Errorf("map_batches result %s", got)
	}
}

func TestCancelDuringStartLeavesNoProcess(t *testing.T) {
	eachWorker(t, testCancelDuringStartLeavesNoProcess)
}

func testCancelDuringStartLeavesNoProcess(t *testing.T, w worker) {
	f := newFixture(t, w)
	for _, after := range []time.Duration{0, time.Millisecond, 20 * time.Millisecond, 100 * time.Millisecond, 300 * time.Millisecond} {
		r, err := pluginrunner.NewRunner(pluginrunner.Options{
			Calls:       []*workerpb.UdfCall{testkit.Call(f.specs["plus_one"], "y", "x")},
			InputSchema: int64Schema,
			Python:      w.python,
			Env:         w.env,
			Logger:      slog.New(slog.DiscardHandler),
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(after, cancel)
		// Whichever wins the race, nothing may be left running (the
		// fixture checks for leaked processes).
		if err := r.Open(ctx); err == nil {
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
		}
		r.Cancel()
		cancel()
	}
}

// slowOpenSource's UDF takes 30 s to unpickle (its global's reduce sleeps),
// so its Open RPC is in flight for that long.
const slowOpenSource = `
import time
from flinkgo import udf

class SlowToLoad:
    def __reduce__(self):
        return (time.sleep, (30,))

slow = SlowToLoad()

@udf("int64")
def slow_open(x):
    return x if slow is None else -x
`

// An open canceled because the job failed or was canceled (another subtask's
// UDF raised) stops a worker that is alive and well: it is no lost worker,
// and no "worker exited unexpectedly ... exit status 0" warning says so.
func TestCanceledOpenIsNoLostWorker(t *testing.T) {
	f := newFixture(t, pythonWorker(t))
	var logs syncBuffer
	opts := f.options(int64Schema, testkit.Call(testkit.UDFSpecs(t, slowOpenSource)["slow_open"], "y", "x"))
	opts.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	r, err := pluginrunner.NewRunner(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Cancel()
	ctx, cancel := context.WithCancel(context.Background())
	opened := make(chan error, 1)
	go func() { opened <- r.Open(ctx) }()
	poll.Until(t, 60*time.Second, "the worker to start", func() bool { return r.Pid() != 0 })
	cancel()
	if err := <-opened; !errors.Is(err, context.Canceled) {
		t.Fatalf("Open returned %v, want the cancel", err)
	}
	r.Cancel()
	for _, spurious := range []string{"exited unexpectedly", "lost the connection"} {
		if strings.Contains(logs.String(), spurious) {
			t.Errorf("a canceled open logged %q:\n%s", spurious, logs.String())
		}
	}
}
