package pluginrunner_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
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

// The runner's error paths that a well-behaved Python worker never takes,
// against a Go worker told to misbehave.

// goUDF is a one-call chain of a Go worker function over column x.
func goUDF(name string, fn goworker.Func) *workerpb.UdfCall {
	return testkit.Call(goworker.UDF(name, fn, arrow.PrimitiveTypes.Int64), "y", "x")
}

func TestWorkerExitingAtStartIsNamed(t *testing.T) {
	f := newFixture(t, goWorker(goworker.ExitAtStart))
	r, err := pluginrunner.NewRunner(f.options(int64Schema, goUDF("ident", goworker.Identity)))
	if err != nil {
		t.Fatal(err)
	}
	err = r.Open(context.Background())
	if !errors.Is(err, bridge.ErrWorkerStart) {
		t.Fatalf("Open: %v, want ErrWorkerStart", err)
	}
	for _, want := range []string{`udf "ident"`, "exit status 3", goworker.StartExitLine, f.w.python} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("start error lacks %q:\n%v", want, err)
		}
	}
}

func TestStdoutBeforeHandshakeIsNamed(t *testing.T) {
	f := newFixture(t, goWorker(goworker.PrintAtStart))
	r, err := pluginrunner.NewRunner(f.options(int64Schema, goUDF("ident", goworker.Identity)))
	if err != nil {
		t.Fatal(err)
	}
	err = r.Open(context.Background())
	if !errors.Is(err, bridge.ErrWorkerStart) {
		t.Fatalf("Open: %v, want ErrWorkerStart", err)
	}
	for _, want := range []string{"printed to stdout before the worker started", goworker.StrayStdoutLine} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("start error lacks %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "import flinkgo") {
		t.Errorf("start error gives the misleading install hint:\n%v", err)
	}
}

func TestWorkerHangingAtStart(t *testing.T) {
	t.Run("StartTimeout", func(t *testing.T) {
		f := newFixture(t, goWorker(goworker.HangAtStart))
		opts := f.options(int64Schema, goUDF("ident", goworker.Identity))
		opts.StartTimeout = 200 * time.Millisecond
		r, err := pluginrunner.NewRunner(opts)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Open(context.Background()); !errors.Is(err, bridge.ErrWorkerStart) || !strings.Contains(err.Error(), "timeout") {
			t.Fatalf("Open: %v, want ErrWorkerStart after a timeout", err)
		}
	})
	t.Run("context", func(t *testing.T) {
		f := newFixture(t, goWorker(goworker.HangAtStart))
		r, err := pluginrunner.NewRunner(f.options(int64Schema, goUDF("ident", goworker.Identity)))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		opened := make(chan error, 1)
		go func() { opened <- r.Open(ctx) }()
		// The process exists before it hangs; then the start is canceled.
		poll.Until(t, hangGuard, "the worker process to start", func() bool { return len(testkit.ChildPids()) > 0 })
		cancel()
		if err := <-opened; !errors.Is(err, bridge.ErrWorkerStart) || !errors.Is(err, context.Canceled) {
			t.Fatalf("Open: %v, want ErrWorkerStart wrapping context.Canceled", err)
		}
	})
}

// hangGuard only turns a hang into a failure; nothing asserts durations.
const hangGuard = 30 * time.Second

func TestWorkerCrashReportsStatusAndStderr(t *testing.T) {
	eachTransport(t, func(t *testing.T, transport pluginrunner.Transport) {
		f := newFixture(t, goWorker(goworker.Serve))
		f.transport = transport
		r := f.runner(int64Schema, goUDF("fragile", goworker.CrashOn(3)))
		defer r.Cancel()
		pid := r.Pid()
		for seq, vals := range [][]int64{{1, 2}, {3}} {
			b := f.int64Batch(vals...)
			_ = r.Process(context.Background(), int64(seq), b)
			b.Release()
		}
		results, err := flushAndTake(t, r)
		for _, res := range results {
			res.Batch.Release()
		}
		var exitErr *bridge.WorkerExitError
		if !errors.As(err, &exitErr) || !errors.Is(err, bridge.ErrWorkerLost) {
			t.Fatalf("want a WorkerExitError, got %v", err)
		}
		if exitErr.Pid != pid || exitErr.Status != "exit status 3" || exitErr.UDF != "fragile" {
			t.Errorf("exit error: %+v", exitErr)
		}
		if !slices.Contains(exitErr.StderrTail, "goworker: crashing on value 3") {
			t.Errorf("stderr tail %q lacks the worker's last words", exitErr.StderrTail)
		}
		if !strings.Contains(err.Error(), `udf "fragile"`) || !strings.Contains(err.Error(), "crashing on value 3") {
			t.Errorf("message does not name the UDF and show stderr: %v", err)
		}
	})
}

func TestOpenErrorOfWorkerIsUDFError(t *testing.T) {
	f := newFixture(t, goWorker(goworker.Serve))
	r, err := pluginrunner.NewRunner(f.options(int64Schema, goUDF("picky", goworker.FailOpen)))
	if err != nil {
		t.Fatal(err)
	}
	err = r.Open(context.Background())
	var udfErr *bridge.UDFError
	if !errors.As(err, &udfErr) || udfErr.UDF != "picky" || udfErr.Seq != -1 || udfErr.Operator != "test" {
		t.Fatalf("Open: %v, want a UDFError of picky not tied to a batch", err)
	}
	b := f.int64Batch(1)
	defer b.Release()
	if err := r.Process(context.Background(), 0, b); err == nil {
		t.Error("Process after a failed Open succeeded")
	}
	if err := r.Close(); err != nil {
		t.Errorf("Close after a failed Open: %v", err)
	}
}

func TestCloseReportsTeardownError(t *testing.T) {
	f := newFixture(t, goWorker(goworker.Serve))
	r := f.runner(int64Schema, goUDF("leaky", goworker.FailClose))
	pid := r.Pid()
	b := f.int64Batch(1, 2)
	defer b.Release()
	if err := r.Process(context.Background(), 0, b); err != nil {
		t.Fatal(err)
	}
	results, err := flushAndTake(t, r)
	if err != nil || len(results) != 1 {
		t.Fatalf("%d results, %v", len(results), err)
	}
	results[0].Batch.Release()
	err = r.Close()
	var udfErr *bridge.UDFError
	if !errors.As(err, &udfErr) || udfErr.UDF != "leaky" || !strings.Contains(err.Error(), "told to fail in Close") {
		t.Fatalf("Close: %v, want the worker's teardown error", err)
	}
	if !testkit.WaitGone(pid, hangGuard) {
		t.Errorf("worker %d alive after a failed Close", pid)
	}
}

func TestWorkerWithoutDataSocketIsNamed(t *testing.T) {
	f := newFixture(t, goWorker(goworker.Serve))
	r, err := pluginrunner.NewRunner(f.options(int64Schema, goUDF("old", goworker.NoDataSocket)))
	if err != nil {
		t.Fatal(err)
	}
	err = r.Open(context.Background())
	if err == nil || !strings.Contains(err.Error(), "the worker opened no data socket") || !strings.Contains(err.Error(), `udf "old"`) {
		t.Fatalf("Open: %v, want an error saying the worker opened no data socket", err)
	}
	// The gRPC stream needs no socket.
	f.transport = pluginrunner.TransportGRPCStream
	r = f.runner(int64Schema, goUDF("old", goworker.NoDataSocket))
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestProcessWaitsForInFlightWindow(t *testing.T) {
	eachTransport(t, func(t *testing.T, transport pluginrunner.Transport) {
		f := newFixture(t, goWorker(goworker.Serve))
		f.transport = transport
		opts := f.options(int64Schema, goUDF("sleepy", goworker.Hang))
		opts.MaxInFlight = 2
		r := f.open(opts)
		defer r.Cancel()
		b := f.int64Batch(1)
		defer b.Release()
		for seq := range int64(2) {
			if err := r.Process(context.Background(), seq, b); err != nil {
				t.Fatal(err)
			}
		}
		// The window is full, so only the context can end this Process.
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := r.Process(ctx, 2, b); !errors.Is(err, context.Canceled) {
			t.Fatalf("Process with a full window: %v, want context.Canceled", err)
		}
		flushed := make(chan error, 1)
		go func() { flushed <- r.Flush() }()
		r.Cancel()
		if err := <-flushed; !errors.Is(err, bridge.ErrClosed) {
			t.Fatalf("Flush after Cancel: %v, want ErrClosed", err)
		}
	})
}

// The same with Python: a sitecustomize.py that prints, the classic cause.
func TestStdoutBeforeHandshakeIsNamedWithPython(t *testing.T) {
	w := pythonWorker(t)
	site := t.TempDir()
	const line = "hello from sitecustomize"
	if err := os.WriteFile(filepath.Join(site, "sitecustomize.py"), []byte("print("+strconv.Quote(line)+")\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	w.env = append(w.env, "PYTHONPATH="+site)
	f := newFixture(t, w)
	r, err := pluginrunner.NewRunner(f.options(int64Schema, testkit.Call(w.specs["affine"], "y", "x")))
	if err != nil {
		t.Fatal(err)
	}
	err = r.Open(context.Background())
	if !errors.Is(err, bridge.ErrWorkerStart) {
		t.Fatalf("Open: %v, want ErrWorkerStart", err)
	}
	for _, want := range []string{"printed to stdout before the worker started", line} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("start error lacks %q:\n%v", want, err)
		}
	}
}
