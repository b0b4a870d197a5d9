package integration_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/integration/testkit"
	"github.com/flinkgo/flinkgo/internal/poll"
	"github.com/flinkgo/flinkgo/runtime/job"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/udf/bridge"
	"github.com/flinkgo/flinkgo/udf/bridge/pluginrunner"
)

// The pipelines below are written with the Python API; each also writes
// what pandas computes from the same input to expected.csv, and checkSource
// compares the job's CSV parts with it.
const pipelinePrelude = `
import os
import numpy as np
import pandas as pd
import flinkgo as fg
from flinkgo import udf

DIR = os.environ["FLINKGO_TEST_DIR"]
OUT = os.path.join(DIR, "out")
PARALLELISM = int(os.environ.get("FLINKGO_TEST_PARALLELISM", "1"))
rng = np.random.default_rng(3)
readings = pd.DataFrame({
    "id": np.arange(2000, dtype="int64"),
    "site": rng.choice(["north", "south", "east"], 2000),
    "temp": rng.normal(20, 8, 2000).round(2),
})
env = fg.Environment(parallelism=PARALLELISM)
`

const checkSource = `
import glob, sys
import pandas as pd
out_dir, expected = sys.argv[1], sys.argv[2]
parts = sorted(glob.glob(out_dir + "/part-*.csv"))
got = pd.concat([pd.read_csv(p) for p in parts], ignore_index=True)
want = pd.read_csv(expected)
cols = list(want.columns)
got = got[cols].sort_values(cols, ignore_index=True)
want = want.sort_values(cols, ignore_index=True)
pd.testing.assert_frame_equal(got, want, check_dtype=False, rtol=1e-9)
print(f"{len(got)} rows match")
`

// runPipeline builds the pipeline's plan with Python, plans and runs it,
// and compares the output with pandas' answer.
func runPipeline(t *testing.T, body string, parallelism int) *job.Metrics {
	t.Helper()
	testkit.NoLeakedWorkers(t)
	dir := t.TempDir()
	t.Setenv("FLINKGO_TEST_PARALLELISM", fmt.Sprint(parallelism))
	jp := testkit.JobPlan(t, pipelinePrelude+body, dir)
	g, err := plan.PlanWire(jp, plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	m, err := job.Run(context.Background(), g, runOptions(t, mem))
	if err != nil {
		t.Fatalf("%v\nplan:\n%s", err, g.Explain())
	}
	check := filepath.Join(dir, "check.py")
	if err := os.WriteFile(check, []byte(checkSource), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(testkit.Python(t), check, filepath.Join(dir, "out"), filepath.Join(dir, "expected.csv")).CombinedOutput()
	if err != nil {
		t.Fatalf("output differs from pandas: %v\n%s\nplan:\n%s", err, out, g.Explain())
	}
	return m
}

// runAtParallelism1And3 runs the pipeline, and checks it against pandas, at
// parallelism 1 and 3.
func runAtParallelism1And3(t *testing.T, body string) {
	for _, p := range []int{1, 3} {
		t.Run(fmt.Sprintf("parallelism=%d", p), func(t *testing.T) { runPipeline(t, body, p) })
	}
}

func runOptions(t *testing.T, mem memory.Allocator) job.Options {
	return job.Options{
		Allocator: mem,
		Runner: pluginrunner.Options{
			Python: testkit.Python(t),
			Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		},
	}
}

func TestPipelineExpressions(t *testing.T) {
	body := `
df = env.from_pandas(readings)
hot = df.filter((fg.col("temp") > 20) & (fg.col("site") != "east"))
out = hot.with_column("f", fg.col("temp") * 9 / 5 + 32).select("id", "site", "f")
out.write_csv(OUT)
want = readings[(readings.temp > 20) & (readings.site != "east")].assign(f=lambda d: d.temp * 9 / 5 + 32)
want[["id", "site", "f"]].to_csv(os.path.join(DIR, "expected.csv"), index=False)
plan = env.plan("expressions")
`
	runAtParallelism1And3(t, body)
}

func TestPipelineUDFs(t *testing.T) {
	body := `
@udf("float64", func_type="pandas")
def to_kelvin(c):
    return c + 273.15

@udf("string", concurrency=2)
def shout(s):
    return s.upper() + "!"

df = env.from_pandas(readings)
out = df.with_columns(k=to_kelvin(fg.col("temp")), loud=shout(fg.col("site"))).select("id", "k", "loud")
out.write_csv(OUT)
want = readings.assign(k=readings.temp + 273.15, loud=readings.site.str.upper() + "!")
want[["id", "k", "loud"]].to_csv(os.path.join(DIR, "expected.csv"), index=False)
plan = env.plan("udfs")
`
	runAtParallelism1And3(t, body)
}

func TestPipelineKeyedAggregate(t *testing.T) {
	body := `
df = env.from_pandas(readings)
agg = df.key_by("site").agg(fg.mean("temp").alias("avg"), fg.count().alias("n"), fg.sum("id").alias("ids"), fg.max("temp").alias("hi"))
agg.write_csv(OUT)
want = readings.groupby("site", as_index=False).agg(avg=("temp", "mean"), n=("id", "size"), ids=("id", "sum"), hi=("temp", "max"))
want.to_csv(os.path.join(DIR, "expected.csv"), index=False)
plan = env.plan("aggregate")
`
	runAtParallelism1And3(t, body)
}

func TestPipelineFailingUDFFailsTheJob(t *testing.T) {
	testkit.NoLeakedWorkers(t)
	dir := t.TempDir()
	jp := testkit.JobPlan(t, pipelinePrelude+`
@udf("float64")
def fragile(t):
    if t > 40:
        raise ArithmeticError(f"sensor overheated: {t}")
    return t

env.from_pandas(readings).with_column("x", fragile(fg.col("temp"))).write_csv(OUT)
plan = env.plan("failing")
`, dir)
	g, err := plan.PlanWire(jp, plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	_, err = job.Run(context.Background(), g, runOptions(t, mem))
	var udfErr *bridge.UDFError
	if !errors.As(err, &udfErr) || udfErr.UDF != "fragile" || !strings.Contains(err.Error(), "sensor overheated") ||
		!strings.Contains(udfErr.Traceback, `raise ArithmeticError(f"sensor overheated: {t}")`) {
		t.Fatalf("want the UDF's exception with its traceback, got %v", err)
	}
	// A failed job publishes no part file.
	if parts, _ := filepath.Glob(filepath.Join(dir, "out", "*")); len(parts) != 0 {
		t.Errorf("failed job left %v", parts)
	}
}

func TestPipelineCancelStopsPromptly(t *testing.T) {
	testkit.NoLeakedWorkers(t)
	dir := t.TempDir()
	jp := testkit.JobPlan(t, pipelinePrelude+`
import time

@udf("float64")
def slow(t):
    open(os.path.join(DIR, "hanging"), "w").close()  # the test waits for this
    time.sleep(1000)
    return t

env.datagen(schema={"id": "int64", "temp": "float64"}).with_column("x", slow(fg.col("temp"))).write_csv(OUT)
plan = env.plan("cancel")
`, dir)
	g, err := plan.PlanWire(jp, plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ctx, cancel := context.WithCancelCause(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := job.Run(ctx, g, runOptions(t, mem))
		done <- err
	}()
	// Cancel once the worker hangs in the UDF.
	poll.Until(t, 60*time.Second, "the UDF to run", func() bool {
		_, err := os.Stat(filepath.Join(dir, "hanging"))
		return err == nil
	})
	cause := errors.New("user canceled")
	cancel(cause)
	select {
	case err = <-done:
	case <-time.After(60 * time.Second): // hang guard
		t.Fatal("job did not stop after cancel")
	}
	if !errors.Is(err, cause) {
		t.Errorf("canceled job returned %v, want the cause", err)
	}
}

func TestSlowSinkBoundsTheMemoryOfAFastSource(t *testing.T) {
	testkit.NoLeakedWorkers(t)
	dir := t.TempDir()
	jp := testkit.JobPlan(t, pipelinePrelude+`
import time

@udf("float64", func_type="pandas")
def slow(v):
    time.sleep(0.05)
    return v

# An unbounded generator, as fast as Go can make rows, into a slow UDF.
env.datagen(schema={"id": "int64", "v": "float64"}).with_column("w", slow(fg.col("v"))).write_csv(OUT)
plan = env.plan("backpressure")
`, dir)
	g, err := plan.PlanWire(jp, plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ctx, cancel := context.WithCancel(context.Background())
	j, err := job.Start(ctx, g, runOptions(t, mem))
	if err != nil {
		t.Fatal(err)
	}
	var peak int
	var generated int64
	for range 60 { // three seconds of samples
		// Real wall time: the peak is sampled while the real job runs.
		time.Sleep(50 * time.Millisecond)
		peak = max(peak, mem.CurrentAlloc())
	}
	generated = j.Snapshot().Operators[0].RowsOut
	cancel()
	if _, err := j.Wait(); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled job returned %v", err)
	}
	// Unthrottled, the source makes millions of rows a second (16 bytes
	// each); blocked by the slow UDF it may run ahead only by what the
	// bounded inboxes and one bundle hold.
	const bound = 64 << 20
	if peak > bound {
		t.Errorf("peak Arrow memory %d bytes (%d rows generated): the source was not held back", peak, generated)
	}
	t.Logf("peak Arrow memory %d KiB with %d rows generated", peak>>10, generated)
}

func TestModuleMissingInTheWorkerIsNamed(t *testing.T) {
	testkit.NoLeakedWorkers(t)
	dir := t.TempDir()
	// The UDF lives in a module the declaring Python can import (so
	// cloudpickle ships it by reference) but the worker cannot.
	if err := os.WriteFile(filepath.Join(dir, "sensorlib.py"), []byte("def calibrate(t):\n    return t + 0.5\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PYTHONPATH", dir)
	jp := testkit.JobPlan(t, pipelinePrelude+`
import sensorlib
calibrated = udf(sensorlib.calibrate, "float64", name="calibrate")
env.from_pandas(readings).with_column("c", calibrated(fg.col("temp"))).write_csv(OUT)
plan = env.plan("missing-module")
`, dir)
	os.Unsetenv("PYTHONPATH")
	g, err := plan.PlanWire(jp, plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	_, err = job.Run(context.Background(), g, runOptions(t, mem))
	var udfErr *bridge.UDFError
	if !errors.As(err, &udfErr) || udfErr.UDF != "calibrate" || udfErr.Type != "ModuleNotFoundError" ||
		!strings.Contains(err.Error(), "'sensorlib'") || !strings.Contains(err.Error(), "install it") {
		t.Fatalf("want the missing module named, got %v", err)
	}
}
