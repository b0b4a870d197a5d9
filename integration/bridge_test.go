package integration_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
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
	"github.com/flinkgo/flinkgo/internal/poll"
	"github.com/flinkgo/flinkgo/pipeline"
	"github.com/flinkgo/flinkgo/udf/bridge"
	"github.com/flinkgo/flinkgo/udf/bridge/pluginrunner"
	"github.com/flinkgo/flinkgo/udf/bridge/proto/workerpb"
)

// TestMain stops the Kafka broker of kafkasink_test.go, if one started, and
// checks for leaks.
func TestMain(m *testing.M) { testkit.KafkaMain(m) }

// env is what every test here needs: a checked allocator that must end at
// zero, and a check that no worker process outlives the test.
type env struct {
	t   *testing.T
	mem *memory.CheckedAllocator
}

func newEnv(t *testing.T) *env {
	t.Helper()
	testkit.NoLeakedWorkers(t)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	return &env{t: t, mem: mem}
}

func (e *env) options(parallelism int) pipeline.Options {
	return pipeline.Options{
		Parallelism: parallelism,
		Allocator:   e.mem,
		Name:        e.t.Name(),
		Runner: pluginrunner.Options{
			Python: testkit.Python(e.t),
			Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		},
	}
}

// int64Batches makes n batches of size rows holding 0, 1, 2, ...
func (e *env) int64Batches(n, size int) []arrow.RecordBatch {
	schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil)
	out := make([]arrow.RecordBatch, n)
	b := array.NewRecordBuilder(e.mem, schema)
	defer b.Release()
	for i := range n {
		for j := range size {
			b.Field(0).(*array.Int64Builder).Append(int64(i*size + j))
		}
		out[i] = b.NewRecordBatch()
	}
	return out
}

func release(batches []arrow.RecordBatch) {
	for _, b := range batches {
		b.Release()
	}
}

// run runs chain over batches and returns the results, all released at the
// end of the test.
func (e *env) run(ctx context.Context, chain pipeline.Chain, opts pipeline.Options, batches []arrow.RecordBatch) ([]arrow.RecordBatch, error) {
	out, err := pipeline.RunBatches(ctx, chain, opts, batches)
	e.t.Cleanup(func() { release(out) })
	return out, err
}

// column concatenates column i of batches as strings, one per row.
func column(batches []arrow.RecordBatch, i int) []string {
	var out []string
	for _, b := range batches {
		col := b.Column(i)
		for r := range col.Len() {
			out = append(out, col.ValueStr(r))
		}
	}
	return out
}

func chainOf(schema *arrow.Schema, calls ...*workerpb.UdfCall) pipeline.Chain {
	return pipeline.Chain{Calls: calls, InputSchema: schema}
}

const kindsSource = `
import asyncio
import pyarrow.compute as pc
from flinkgo import udf

@udf("float64", func_type="pandas")
def affine(x):
    return x * 2 + 1

@udf("string")
def shout(s):
    return s.upper() + "!"

@udf("int64", func_type="arrow")
def square(x):
    return pc.multiply(x, x)

@udf("int64")
async def later(x):
    await asyncio.sleep(0)
    return x + 100
`

func TestEveryUDFKindGivesCorrectResults(t *testing.T) {
	for _, parallelism := range []int{1, 2} {
		t.Run(fmt.Sprintf("parallelism=%d", parallelism), func(t *testing.T) {
			e := newEnv(t)
			specs := testkit.UDFSpecs(t, kindsSource)
			schema := arrow.NewSchema([]arrow.Field{
				{Name: "f", Type: arrow.PrimitiveTypes.Float64},
				{Name: "s", Type: arrow.BinaryTypes.String},
				{Name: "n", Type: arrow.PrimitiveTypes.Int64},
			}, nil)
			var inputs []arrow.RecordBatch
			var wantF, wantS, wantSq, wantLater []string
			b := array.NewRecordBuilder(e.mem, schema)
			for i := range 7 {
				for j := range 150 {
					v := i*150 + j
					b.Field(0).(*array.Float64Builder).Append(float64(v) / 4)
					b.Field(1).(*array.StringBuilder).Append("w" + strconv.Itoa(v))
					b.Field(2).(*array.Int64Builder).Append(int64(v))
					wantF = append(wantF, strconv.FormatFloat(float64(v)/4*2+1, 'g', -1, 64))
					wantS = append(wantS, "W"+strconv.Itoa(v)+"!")
					wantSq = append(wantSq, strconv.Itoa(v*v))
					wantLater = append(wantLater, strconv.Itoa(v+100))
				}
				inputs = append(inputs, b.NewRecordBatch())
			}
			b.Release()
			defer release(inputs)

			chain := chainOf(schema,
				testkit.Call(specs["affine"], "a", "f"),
				testkit.Call(specs["shout"], "b", "s"),
				testkit.Call(specs["square"], "c", "n"),
				testkit.Call(specs["later"], "d", "c"),
			)
			opts := e.options(parallelism)
			opts.BatchSize = 100
			out, err := e.run(context.Background(), chain, opts, inputs)
			if err != nil {
				t.Fatal(err)
			}
			// later reads square's output: (v*v)+100.
			for i := range wantLater {
				v := i
				wantLater[i] = strconv.Itoa(v*v + 100)
			}
			for i, want := range [][]string{wantF, wantS, wantSq, wantLater} {
				if got := column(out, i); !slices.Equal(got, want) {
					t.Errorf("column %d: got %d values, first %v; want first %v", i, len(got), head(got), head(want))
				}
			}
		})
	}
}

func head(s []string) []string { return s[:min(5, len(s))] }

func TestConcurrencyRunsThatManyWorkersAtOnce(t *testing.T) {
	e := newEnv(t)
	barrier := t.TempDir()
	// Every worker's first batch waits inside the UDF until three workers
	// are inside at once: the run can only finish if they overlap.
	specs := testkit.UDFSpecs(t, fmt.Sprintf(`
import os, time
import pandas as pd
from flinkgo import udf

BARRIER = %q

@udf("int64", func_type="pandas", concurrency=3)
def whoami(x):
    marker = os.path.join(BARRIER, str(os.getpid()))
    open(marker, "w").close()
    deadline = time.monotonic() + 60
    while len(os.listdir(BARRIER)) < 3:
        if time.monotonic() > deadline:
            raise RuntimeError(f"only {len(os.listdir(BARRIER))} workers ran at once")
        time.sleep(0.01)
    return pd.Series([os.getpid()] * len(x))
`, barrier))
	inputs := e.int64Batches(6, 50)
	defer release(inputs)
	chain := chainOf(inputs[0].Schema(), testkit.Call(specs["whoami"], "pid", "x"))
	// The workers take batches of batch_size rows round robin: 50-row
	// batches give each of them two.
	opts := e.options(1)
	opts.BatchSize = 50
	res, err := pipeline.Resolve(chain, opts)
	if err != nil || res.Parallelism != 3 {
		t.Fatalf("Resolve = %+v, %v; want parallelism 3", res, err)
	}
	out, err := e.run(context.Background(), chain, opts, inputs)
	if err != nil {
		t.Fatal(err)
	}
	pids := map[string]int{}
	for _, p := range column(out, 0) {
		pids[p]++
	}
	if len(pids) != 3 {
		t.Errorf("rows were answered by %d worker pids (%v), want 3", len(pids), pids)
	}
	if entries, _ := os.ReadDir(barrier); len(entries) != 3 {
		t.Errorf("%d workers entered the UDF, want 3", len(entries))
	}
}

func TestAsyncConcurrencyIsCallsInFlightInOneWorker(t *testing.T) {
	e := newEnv(t)
	// Each call waits until four calls are in flight at once, and records
	// the most it ever saw: exactly the concurrency, never more.
	specs := testkit.UDFSpecs(t, `
import asyncio, os, time
from flinkgo import udf

state = {"now": 0, "max": 0}

@udf("string", concurrency=4)
async def overlap(x):
    state["now"] += 1
    state["max"] = max(state["max"], state["now"])
    deadline = time.monotonic() + 60
    while state["max"] < 4 and time.monotonic() < deadline:
        await asyncio.sleep(0.005)
    await asyncio.sleep(0.01)
    state["now"] -= 1
    return f"{os.getpid()}:{state['max']}"
`)
	inputs := e.int64Batches(2, 40)
	defer release(inputs)
	chain := chainOf(inputs[0].Schema(), testkit.Call(specs["overlap"], "o", "x"))
	res, err := pipeline.Resolve(chain, e.options(1))
	if err != nil || res.Parallelism != 1 {
		t.Fatalf("Resolve = %+v, %v; an async UDF's concurrency must not set parallelism", res, err)
	}
	out, err := e.run(context.Background(), chain, e.options(1), inputs)
	if err != nil {
		t.Fatal(err)
	}
	got := column(out, 0)
	if len(got) != 80 {
		t.Fatalf("got %d rows, want 80", len(got))
	}
	pid := strings.Split(got[0], ":")[0]
	for _, v := range got {
		parts := strings.Split(v, ":")
		if parts[0] != pid {
			t.Errorf("rows came from workers %s and %s, want one", pid, parts[0])
		}
		if parts[1] != "4" {
			t.Errorf("most calls in flight seen: %s, want 4", parts[1])
		}
	}
}

func TestWorkerReceivesBatchSize(t *testing.T) {
	e := newEnv(t)
	specs := testkit.UDFSpecs(t, `
import pandas as pd
from flinkgo import udf

@udf("int64", func_type="pandas", batch_size=300)
def seen(x):
    return pd.Series([len(x)] * len(x))

@udf("int64", func_type="pandas", batch_size=120)
def seen_small(x):
    return pd.Series([len(x)] * len(x))

@udf("int64", func_type="pandas")
def seen_default(x):
    return pd.Series([len(x)] * len(x))
`)
	inputs := e.int64Batches(10, 1000)
	defer release(inputs)
	schema := inputs[0].Schema()

	t.Run("one udf", func(t *testing.T) {
		out, err := e.run(context.Background(), chainOf(schema, testkit.Call(specs["seen"], "n", "x")), e.options(1), inputs)
		if err != nil {
			t.Fatal(err)
		}
		assertBatchSizes(t, column(out, 0), 300, 10000)
	})
	t.Run("fused chain takes the smallest", func(t *testing.T) {
		chain := chainOf(schema,
			testkit.Call(specs["seen"], "a", "x"),
			testkit.Call(specs["seen_default"], "b", "x"),
			testkit.Call(specs["seen_small"], "c", "x"),
		)
		out, err := e.run(context.Background(), chain, e.options(1), inputs)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			assertBatchSizes(t, column(out, i), 120, 10000)
		}
	})
}

// assertBatchSizes checks that rows were sent in batches of size, with one
// smaller batch at the end of input.
func assertBatchSizes(t *testing.T, got []string, size, rows int) {
	t.Helper()
	if len(got) != rows {
		t.Fatalf("got %d rows, want %d", len(got), rows)
	}
	full := rows / size * size
	for i, v := range got {
		want := size
		if i >= full {
			want = rows - full
		}
		if v != strconv.Itoa(want) {
			t.Fatalf("row %d was sent in a batch of %s rows, want %d", i, v, want)
		}
	}
}

func TestUDFExceptionReachesCallerWithTraceback(t *testing.T) {
	e := newEnv(t)
	specs := testkit.UDFSpecs(t, `
from flinkgo import udf

def check(v):
    if v == 1234:
        raise ValueError(f"bad reading {v}")
    return v

@udf("int64")
def validate(x):
    return check(x)
`)
	inputs := e.int64Batches(5, 1000)
	defer release(inputs)
	_, err := e.run(context.Background(), chainOf(inputs[0].Schema(), testkit.Call(specs["validate"], "v", "x")), e.options(2), inputs)
	var udfErr *bridge.UDFError
	if !errors.As(err, &udfErr) {
		t.Fatalf("want a *bridge.UDFError, got %v", err)
	}
	msg := err.Error()
	for _, want := range []string{`udf "validate"`, "ValueError", "bad reading 1234", "in check", `raise ValueError(f"bad reading {v}")`} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
}

// sleeperSource declares a UDF that announces its pid, then sleeps on the
// given input value, so tests can kill, stop or cancel it mid-bundle.
func sleeperSource(dir string) string {
	return fmt.Sprintf(`
import os, time
from flinkgo import udf

@udf("int64")
def nap(x):
    if x == 1500:
        open(os.path.join(%q, str(os.getpid())), "w").close()
        time.sleep(1000)
    return x
`, dir)
}

// waitForPid waits for the UDF to announce the pid of the worker that hangs.
func waitForPid(t *testing.T, dir string) int {
	t.Helper()
	var entries []os.DirEntry
	poll.Until(t, 60*time.Second, "a worker to reach the hanging row", func() bool {
		entries, _ = os.ReadDir(dir)
		return len(entries) > 0
	})
	pid, err := strconv.Atoi(entries[0].Name())
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

func TestWorkerKilledMidBundleFailsTheRun(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	specs := testkit.UDFSpecs(t, sleeperSource(dir))
	inputs := e.int64Batches(4, 1000)
	defer release(inputs)
	done := make(chan error, 1)
	go func() {
		_, err := pipeline.RunBatches(context.Background(), chainOf(inputs[0].Schema(), testkit.Call(specs["nap"], "y", "x")), e.options(2), inputs)
		done <- err
	}()
	pid := waitForPid(t, dir)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err := <-done
	var exitErr *bridge.WorkerExitError
	if !errors.As(err, &exitErr) || exitErr.Pid != pid || exitErr.Status != "signal: killed" {
		t.Fatalf("want the worker's exit by SIGKILL, got %v", err)
	}
	if !strings.Contains(err.Error(), `udf "nap"`) {
		t.Errorf("error does not name the UDF: %v", err)
	}
}

func TestCancelReturnsWhileWorkerHangs(t *testing.T) {
	for _, how := range []string{"sleeping", "stopped"} {
		t.Run(how, func(t *testing.T) {
			e := newEnv(t)
			dir := t.TempDir()
			specs := testkit.UDFSpecs(t, sleeperSource(dir))
			inputs := e.int64Batches(4, 1000)
			defer release(inputs)
			ctx, cancel := context.WithCancelCause(context.Background())
			done := make(chan error, 1)
			go func() {
				_, err := pipeline.RunBatches(ctx, chainOf(inputs[0].Schema(), testkit.Call(specs["nap"], "y", "x")), e.options(2), inputs)
				done <- err
			}()
			pid := waitForPid(t, dir)
			if how == "stopped" {
				if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
					t.Fatal(err)
				}
			}
			cause := errors.New("user pressed cancel")
			cancel(cause)
			var err error
			select {
			case err = <-done:
			case <-time.After(30 * time.Second): // a hang guard, not a timing
				t.Fatal("run did not return after cancel")
			}
			if !errors.Is(err, cause) {
				t.Errorf("run returned %v, want the cancel cause", err)
			}
			if testkit.Alive(pid) {
				t.Errorf("hung worker %d survived the cancel", pid)
			}
			if left, _ := filepath.Glob(filepath.Join(os.TempDir(), "flinkgo-worker-*")); len(left) > 0 {
				for _, dir := range left {
					if owner, err := os.Stat(dir); err == nil && time.Since(owner.ModTime()) < time.Minute {
						t.Logf("socket dir still present (may belong to a concurrent test): %s", dir)
					}
				}
			}
		})
	}
}

func TestBatchesAreCutBelowTheMessageLimit(t *testing.T) {
	e := newEnv(t)
	specs := testkit.UDFSpecs(t, `
import pandas as pd
from flinkgo import udf

@udf("int64", func_type="pandas")
def rows_seen(s):
    return pd.Series([len(s)] * len(s))
`)
	// 20 000 rows of 200-byte strings: about 4 MB, four times the limit.
	schema := arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String}}, nil)
	b := array.NewRecordBuilder(e.mem, schema)
	for i := range 20_000 {
		b.Field(0).(*array.StringBuilder).Append(fmt.Sprintf("%0200d", i))
	}
	batch := b.NewRecordBatch()
	b.Release()
	defer batch.Release()
	opts := e.options(1)
	opts.BatchSize = 20_000
	opts.Runner.MaxMessageBytes = 1 << 20
	out, err := e.run(context.Background(), chainOf(schema, testkit.Call(specs["rows_seen"], "n", "s")), opts, []arrow.RecordBatch{batch})
	if err != nil {
		t.Fatal(err)
	}
	got := column(out, 0)
	if len(got) != 20_000 {
		t.Fatalf("got %d rows, want 20000", len(got))
	}
	limitRows := int(opts.Runner.MaxBatchBytes() / 200)
	for i, v := range got {
		n, _ := strconv.Atoi(v)
		if n < 1 || n > limitRows {
			t.Fatalf("row %d went in a batch of %d rows; at most %d fit under the %d-byte cap", i, n, limitRows, opts.Runner.MaxBatchBytes())
		}
	}
}
