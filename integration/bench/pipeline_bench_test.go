package bench

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/integration/testkit"
	"github.com/flinkgo/flinkgo/runtime/job"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/udf/bridge/pluginrunner"
	"github.com/flinkgo/flinkgo/udf/bridge/proto/workerpb"
)

const pipelineRows = 5_000_000

// BenchmarkPipeline runs datagen → pandas UDF → keyed sum → collect on the
// runtime, and the same UDF over the same rows through the bridge alone
// (bridgeAlone: runner and worker, no planner, no tasks), both timed from
// start to last row (worker start included), and reports the runtime's
// overhead over the bridge.
func BenchmarkPipeline(b *testing.B) {
	for _, p := range []int{1, 2} {
		b.Run(fmt.Sprintf("parallelism=%d", p), func(b *testing.B) {
			g := pipelineGraph(b, p, pandasAffine)
			specs := testkit.UDFSpecs(b, udfSource)
			logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
			var pipeline, bridge, runtimeCPU, workerCPU time.Duration
			for b.Loop() {
				start := time.Now()
				self, children := cpuTimes(b)
				runPipeline(b, g, pluginrunner.Options{Python: testkit.Python(b), Logger: logger})
				pipeline += time.Since(start)
				selfAfter, childrenAfter := cpuTimes(b)
				runtimeCPU += selfAfter - self
				workerCPU += childrenAfter - children

				start = time.Now()
				bridgeOnly(b, specs, p, logger)
				bridge += time.Since(start)
			}
			rows := float64(pipelineRows) * float64(b.N)
			b.ReportMetric(rows/pipeline.Seconds(), "pipeline-rows/s")
			b.ReportMetric(rows/bridge.Seconds(), "bridge-rows/s")
			b.ReportMetric(100*(pipeline.Seconds()-bridge.Seconds())/bridge.Seconds(), "overhead-%")
			// CPU time per row, which other work on the machine disturbs less
			// than the wall time: the runtime's (this process: tasks,
			// exchanges, runners) and its Python workers' (cpuTimes).
			b.ReportMetric(float64(runtimeCPU.Nanoseconds())/rows, "runtime-cpu-ns/row")
			b.ReportMetric(float64(workerCPU.Nanoseconds())/rows, "worker-cpu-ns/row")
		})
	}
}

// pipelineWorkload is the UDF stage of a pipeline benchmark: the Python
// that defines the UDF and adds its column to df, and the rows to run.
type pipelineWorkload struct {
	name string
	rows int
	// schema is datagen's, as a Python dict literal.
	schema string
	// udf defines the UDF and sets df to df with the UDF's column added.
	udf string
	// agg is the keyed aggregation over the UDF's column.
	agg string
}

// pandasAffine is BenchmarkPipeline's UDF: x * 2 + 1 in pandas, cheaper per
// row than the runtime's own work around it.
var pandasAffine = pipelineWorkload{
	name: "pandas", rows: pipelineRows, schema: `{"x": "float64"}`,
	udf: `
@udf("float64", func_type="pandas")
def affine(x):
    return x * 2 + 1

df = df.with_column("y", affine(fg.col("x")))
`,
	agg: `fg.sum("y").alias("total")`,
}

// rowUpper is a UDF-bound workload: the row-at-a-time UDF s.upper() of
// issue 15's peer comparison, whose worker costs several times the
// runtime's work per row.
var rowUpper = pipelineWorkload{
	name: "row", rows: 2_000_000, schema: `{"x": "float64", "s": "string"}`,
	udf: `
@udf("string")
def upper(s: str) -> str:
    return s.upper()

df = df.with_column("u", upper(fg.col("s")))
`,
	agg: `fg.max("u").alias("top")`,
}

// pipelineGraph plans a pipeline benchmark's job at parallelism p: datagen
// of w.rows → w's UDF → a keyed aggregation of 100 groups → collect.
func pipelineGraph(b *testing.B, p int, w pipelineWorkload) *plan.Graph {
	b.Helper()
	dir := b.TempDir()
	b.Setenv("BENCH_PARALLELISM", fmt.Sprint(p))
	jp := testkit.JobPlan(b, fmt.Sprintf(`
import os
import flinkgo as fg
from flinkgo import udf

env = fg.Environment(parallelism=int(os.environ["BENCH_PARALLELISM"]))
df = env.datagen(rows=%d, schema=%s)
%s
df = df.with_column("k", (fg.col("x") * 100).cast("int64"))
df.key_by("k").agg(%s).write_csv(os.path.join(os.environ["FLINKGO_TEST_DIR"], "out"))
plan = env.plan("pipeline-bench")
`, w.rows, w.schema, w.udf, w.agg), dir)
	return collectGraph(b, jp)
}

// runPipeline runs pipelineGraph's g on runner and checks its 100 groups.
func runPipeline(b *testing.B, g *plan.Graph, runner pluginrunner.Options) {
	b.Helper()
	var groups atomic.Int64 // the sink's subtasks call Collect concurrently
	_, err := job.Run(context.Background(), g, job.Options{
		Runner: runner,
		Collect: func(_ *plan.Operator, _ int, r arrow.RecordBatch) error {
			groups.Add(r.NumRows())
			r.Release()
			return nil
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	if groups.Load() != 100 {
		b.Fatalf("%d groups, want 100", groups.Load())
	}
}

// BenchmarkPipelineWarm runs BenchmarkPipeline's job, and the same job with
// the row UDF s.upper() (UDF-bound: its worker costs several times the
// runtime's work per row), on warm workers: the runner's worker pool (worker
// reuse, as under flinkgo serve), filled by one untimed run, so each timed
// run is the job's steady state without the interpreter start (about half a
// CPU-second per worker here, mostly imports) that dominates a short job and
// makes parallelism 2 pay twice for it. Parallelism 1 and 2 run in turn in one process; the
// figures are wall time, this process's CPU and the workers' CPU (from
// /proc: warm workers do not exit) per row.
func BenchmarkPipelineWarm(b *testing.B) {
	for _, w := range []pipelineWorkload{pandasAffine, rowUpper} {
		for _, p := range []int{1, 2} {
			b.Run(fmt.Sprintf("udf=%s/parallelism=%d", w.name, p), func(b *testing.B) {
				benchmarkWarm(b, w, p)
			})
		}
	}
}

func benchmarkWarm(b *testing.B, w pipelineWorkload, p int) {
	g := pipelineGraph(b, p, w)
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	pool := pluginrunner.NewPool(logger)
	defer pool.Close()
	runner := pluginrunner.Options{Python: testkit.Python(b), Logger: logger, Pool: pool, IdleTimeout: time.Minute, MaxIdle: p}
	run := func() { runPipeline(b, g, runner) }
	run() // starts the workers; they go back to the pool
	var wall, runtimeCPU, workerCPU time.Duration
	for b.Loop() {
		// Listing the workers walks /proc, a few ms of this process's CPU:
		// it stays outside the timed window.
		workers := childCPU(b)
		self, _ := cpuTimes(b)
		start := time.Now()
		run()
		wall += time.Since(start)
		selfAfter, _ := cpuTimes(b)
		runtimeCPU += selfAfter - self
		workerCPU += childCPU(b) - workers
	}
	rows := float64(w.rows) * float64(b.N)
	b.ReportMetric(rows/wall.Seconds(), "pipeline-rows/s")
	b.ReportMetric(float64(runtimeCPU.Nanoseconds())/rows, "runtime-cpu-ns/row")
	b.ReportMetric(float64(workerCPU.Nanoseconds())/rows, "worker-cpu-ns/row")
}

// childCPU is the CPU time (user and system) of this process's live child
// processes, from /proc/PID/stat; a child that exits meanwhile is not
// counted.
func childCPU(b *testing.B) time.Duration {
	b.Helper()
	var total time.Duration
	for _, pid := range testkit.ChildPids() {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue // exited
		}
		// Fields after the command (in parentheses, which may hold spaces):
		// state is field 3, utime and stime fields 14 and 15, in clock ticks.
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(fields) < 13 {
			b.Fatalf("/proc/%d/stat: %q", pid, stat)
		}
		for _, f := range fields[11:13] {
			ticks, err := strconv.ParseInt(f, 10, 64)
			if err != nil {
				b.Fatalf("/proc/%d/stat: %v", pid, err)
			}
			total += time.Duration(ticks) * time.Second / clockTicksPerSecond
		}
	}
	return total
}

// clockTicksPerSecond is Linux's USER_HZ, the unit of /proc's CPU times
// (100 on every architecture Go supports).
const clockTicksPerSecond = 100

// bridgeOnly sends pipelineRows float64 rows in batches of 10 000 (the
// pipeline's batch size) through the pandas UDF on p workers, the bridge
// alone (bridgeAlone: no planner, no tasks).
func bridgeOnly(b *testing.B, specs map[string]*workerpb.UdfSpec, p int, logger *slog.Logger) {
	mem := memory.NewGoAllocator()
	batch := float64Batch(mem, 10_000)
	defer batch.Release()
	in := make(chan arrow.RecordBatch, 4)
	go func() {
		defer close(in)
		for range pipelineRows / 10_000 {
			batch.Retain()
			in <- batch
		}
	}()
	calls := []*workerpb.UdfCall{testkit.Call(specs["affine"], "y", "x")}
	runner := pluginrunner.Options{Python: testkit.Python(b), Logger: logger}
	if err := bridgeAlone(context.Background(), calls, batch.Schema(), p, 10_000, 0, runner, mem, in, func(int64) {}); err != nil {
		b.Fatal(err)
	}
}
