package job

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/integration/testkit"
	"github.com/flinkgo/flinkgo/runtime/config"
	"github.com/flinkgo/flinkgo/runtime/operators"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/udf/bridge/pluginrunner"
)

// udafWindows plans, from Python, datagen(rows) of (id, ts = id ms) → k =
// id % 7 → key_by(k).window(tumble(ts, 1 s)).agg(count, total(id)), total
// a pandas UDAF summing its Series → CSV files in out, at parallelism p
// (as tumblingCounts, whose expected rows it shares).
func udafWindows(t *testing.T, rows int64, p int, out string, cfg map[string]string) *plan.Graph {
	t.Helper()
	t.Setenv("UDAF_TEST_PARALLELISM", fmt.Sprint(p))
	t.Setenv("UDAF_TEST_OUT", out)
	jp := testkit.JobPlan(t, fmt.Sprintf(`
import os
import flinkgo as fg

@fg.udaf("int64")
def total(s):
    return s.sum()

env = fg.Environment(parallelism=int(os.environ["UDAF_TEST_PARALLELISM"]))
df = env.datagen(rows=%d, schema={"id": "int64", "ts": "timestamp[ms]"}).set_parallelism(1)
df = df.with_column("k", fg.col("id") %% %d).set_parallelism(1)
windows = df.key_by("k").window(fg.tumble("ts", "1 s")).agg(fg.count().alias("n"), total("id"))
windows.write_csv(os.environ["UDAF_TEST_OUT"])
plan = env.plan("udaf-windows")
`, rows, windowKeys), t.TempDir())
	jp.Config = cfg
	g, err := plan.PlanWire(jp, plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// The rows a pandas UDAF's windows keep are keyed state: a job stopped with
// a savepoint at parallelism 2, while windows hold rows of both sides of
// it, and restored at 1 and at 3 gives every window once with the UDAF
// over all its rows (real Python workers).
func TestWindowUDAFRestoresAtAnotherParallelism(t *testing.T) {
	python := testkit.Python(t)
	t.Setenv(pluginrunner.PythonEnv, python) // the restored job's workers
	const rows = 20_000
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	for _, q := range []int{1, 3} {
		t.Run(fmt.Sprintf("2 to %d", q), func(t *testing.T) {
			dir, out, savepoints := t.TempDir(), t.TempDir(), t.TempDir()
			cfg := checkpointConfig(dir, config.ConfigSavepointDir, savepoints)
			reg, held := heldSources(t, operators.Options{SourceBatchRows: 500, KeyedCacheGroups: 4}, 10_250)
			j, err := Start(context.Background(), udafWindows(t, rows, 2, out, cfg), Options{Allocator: mem, Registry: reg})
			if err != nil {
				t.Fatal(err)
			}
			waitHeld(t, j, held, 1)
			restoreFromSavepoint(t, j, cfg, mem, func() *plan.Graph { return udafWindows(t, rows, q, out, cfg) })
			var got []string
			for _, r := range publishedRows(t, out) {
				got = append(got, fmt.Sprintf("%s %s %s", r[0], r[3], r[4]))
			}
			slices.Sort(got)
			if want := wantTumblingCounts(rows); !slices.Equal(got, want) {
				t.Fatalf("%d window rows, want %d; first %v, want %v", len(got), len(want), got[:min(3, len(got))], want[:3])
			}
		})
	}
}
