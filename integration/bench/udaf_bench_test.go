package bench

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flinkgo/flinkgo/integration/testkit"
	"github.com/flinkgo/flinkgo/runtime/job"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/udf/bridge/pluginrunner"
)

const udafRows = 2_000_000

// BenchmarkKeyedTumblingPandasUDAF runs datagen (ts = the row index in ms)
// → with_watermark(ts, 1 s) → k = id % 100 → key_by(k).window(tumble(ts,
// 10 s)).agg(top(id)), top a pandas UDAF taking the max (Nexmark q7's
// aggregate) → collect, at parallelism 1 and 2, timed from start to the
// last window row (workers' start included). Windows fire as the
// watermark passes them: 100 rows per (key, window), 20,000 windows, each
// one Python call inside a worker call that carries many windows. Flink
// 1.13 published about 12 k events/s per core on q7 with Java operators.
//
//	go test -run '^$' -bench KeyedTumblingPandasUDAF -benchtime 1x ./integration/bench/
func BenchmarkKeyedTumblingPandasUDAF(b *testing.B) {
	for _, p := range []int{1, 2} {
		b.Run(fmt.Sprintf("parallelism=%d", p), func(b *testing.B) {
			dir := b.TempDir()
			b.Setenv("BENCH_PARALLELISM", fmt.Sprint(p))
			jp := testkit.JobPlan(b, fmt.Sprintf(`
import os
import flinkgo as fg

@fg.udaf("int64")
def top(s):
    return s.max()

env = fg.Environment(parallelism=int(os.environ["BENCH_PARALLELISM"]))
df = env.datagen(rows=%d, schema={"id": "int64", "ts": "timestamp[ms]"})
df = df.with_watermark("ts", "1 s").with_column("k", fg.col("id") %% 100)
df.key_by("k").window(fg.tumble("ts", "10 s")).agg(top("id")).write_csv(
    os.path.join(os.environ["FLINKGO_TEST_DIR"], "out")
)
plan = env.plan("udaf-bench")
`, udafRows), dir)
			g := collectGraph(b, jp)
			logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
			var elapsed, cpu time.Duration
			for b.Loop() {
				startCPU := cpuTime(b)
				start := time.Now()
				var windows atomic.Int64 // the sink's subtasks call Collect concurrently
				_, err := job.Run(context.Background(), g, job.Options{
					Runner: pluginrunner.Options{Python: testkit.Python(b), Logger: logger},
					Collect: func(_ *plan.Operator, _ int, r arrow.RecordBatch) error {
						windows.Add(r.NumRows())
						r.Release()
						return nil
					},
				})
				if err != nil {
					b.Fatal(err)
				}
				if want := int64(udafRows / 10_000 * 100); windows.Load() != want {
					b.Fatalf("%d window rows, want %d", windows.Load(), want)
				}
				elapsed += time.Since(start)
				cpu += cpuTime(b) - startCPU
			}
			rows := float64(udafRows) * float64(b.N)
			b.ReportMetric(rows/elapsed.Seconds(), "rows/s")
			// Per core: rows per second of CPU time, the runtime's and its
			// (exited) workers', on whatever cores ran them.
			b.ReportMetric(rows/cpu.Seconds(), "rows/cpu-s")
		})
	}
}

// cpuTime is the CPU time (user and system) of this process and of its
// children that have exited.
func cpuTime(b *testing.B) time.Duration {
	self, children := cpuTimes(b)
	return self + children
}

// cpuTimes is the CPU time (user and system) of this process, and of its
// children: those that exited, and those alive (idle workers of a pool)
// as /proc says.
func cpuTimes(b *testing.B) (self, children time.Duration) {
	get := func(who int) time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(who, &ru); err != nil {
			b.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return get(syscall.RUSAGE_SELF), get(syscall.RUSAGE_CHILDREN) + liveChildrenCPU(b)
}

// liveChildrenCPU sums the user and system time of this process's live
// children from /proc/<pid>/stat (fields 14 and 15, in clock ticks of
// 1/100 s on Linux).
func liveChildrenCPU(b *testing.B) time.Duration {
	paths, _ := filepath.Glob("/proc/[0-9]*/stat")
	me := os.Getpid()
	var ticks int64
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			continue // the process ended
		}
		// The command (field 2) is in parentheses and may hold spaces.
		i := bytes.LastIndexByte(data, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(data[i+1:]))
		if len(f) < 13 {
			continue
		}
		if ppid, _ := strconv.Atoi(f[1]); ppid != me {
			continue
		}
		utime, err1 := strconv.ParseInt(f[11], 10, 64)
		stime, err2 := strconv.ParseInt(f[12], 10, 64)
		if err1 != nil || err2 != nil {
			b.Fatalf("%s: %q", path, data)
		}
		ticks += utime + stime
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}
