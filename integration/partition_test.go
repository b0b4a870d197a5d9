package integration_test

import (
	"context"
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/integration/testkit"
	"github.com/flinkgo/flinkgo/runtime/job"
	"github.com/flinkgo/flinkgo/runtime/plan"
)

// partsOf runs a pipeline whose sink writes CSV parts and returns, per sink
// subtask, the ids it received.
func partsOf(t *testing.T, body string, sinkParallelism int) [][]int {
	t.Helper()
	testkit.NoLeakedWorkers(t)
	dir := t.TempDir()
	jp := testkit.JobPlan(t, pipelinePrelude+body, dir)
	g, err := plan.PlanWire(jp, plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	opts := runOptions(t, mem)
	// Partitioners that move whole batches (rebalance, rescale, global)
	// need several batches to show their choice of subtasks.
	opts.SourceBatchRows = 100
	if _, err := job.Run(context.Background(), g, opts); err != nil {
		t.Fatalf("%v\n%s", err, g.Explain())
	}
	parts := make([][]int, sinkParallelism)
	for i := range sinkParallelism {
		f, err := os.Open(filepath.Join(dir, "out", fmt.Sprintf("part-%d.csv", i)))
		if err != nil {
			t.Fatal(err)
		}
		rows, err := csv.NewReader(f).ReadAll()
		_ = f.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows[1:] {
			id, _ := strconv.Atoi(r[0])
			parts[i] = append(parts[i], id)
		}
	}
	return parts
}

// ids 0..1999 come from two datagen subtasks, each a contiguous range:
// subtask 0 has 0..999, subtask 1 has 1000..1999.
const twoSources = `
src = env.datagen(rows=2000, schema={"id": "int64", "v": "float64"}).set_parallelism(2)
`

func TestPartitionersChooseSubtasksAsFlink(t *testing.T) {
	t.Run("rebalance reaches every consumer", func(t *testing.T) {
		parts := partsOf(t, twoSources+`src.rebalance().write_csv(OUT).set_parallelism(3)
plan = env.plan()
`, 3)
		assertAllRows(t, parts, 2000)
		for i, p := range parts {
			if len(p) == 0 {
				t.Errorf("subtask %d got no rows", i)
			}
		}
	})
	t.Run("broadcast gives every consumer every row", func(t *testing.T) {
		parts := partsOf(t, twoSources+`src.broadcast().write_csv(OUT).set_parallelism(3)
plan = env.plan()
`, 3)
		for i, p := range parts {
			slices.Sort(p)
			if len(p) != 2000 || p[0] != 0 || p[1999] != 1999 {
				t.Errorf("subtask %d got %d rows", i, len(p))
			}
		}
	})
	t.Run("global sends everything to subtask 0", func(t *testing.T) {
		parts := partsOf(t, twoSources+`src.global_().write_csv(OUT).set_parallelism(3)
plan = env.plan()
`, 3)
		if len(parts[0]) != 2000 || len(parts[1]) != 0 || len(parts[2]) != 0 {
			t.Errorf("rows per subtask: %d %d %d", len(parts[0]), len(parts[1]), len(parts[2]))
		}
	})
	t.Run("rescale keeps the pointwise subsets", func(t *testing.T) {
		// p=2 → q=4: producer 0 (ids 0..999) feeds consumers 0 and 1,
		// producer 1 (ids 1000..1999) feeds 2 and 3.
		parts := partsOf(t, twoSources+`src.rescale().write_csv(OUT).set_parallelism(4)
plan = env.plan()
`, 4)
		assertPointwise(t, parts)
	})
	t.Run("forward mismatch rebalance (default)", func(t *testing.T) {
		parts := partsOf(t, twoSources+`src.write_csv(OUT).set_parallelism(3)
plan = env.plan()
`, 3)
		assertAllRows(t, parts, 2000)
		for i, p := range parts {
			if len(p) == 0 {
				t.Errorf("subtask %d got no rows", i)
			}
		}
	})
	t.Run("forward mismatch rescale", func(t *testing.T) {
		parts := partsOf(t, `env = fg.Environment(config={"pipeline.forward-mismatch": "rescale"})
`+twoSources+`src.write_csv(OUT).set_parallelism(4)
plan = env.plan()
`, 4)
		assertPointwise(t, parts)
	})
	t.Run("hash puts each key in one subtask", func(t *testing.T) {
		parts := partsOf(t, `
df = env.from_pandas(readings)
df.key_by("site").agg(fg.count().alias("n")).select(fg.col("n").alias("id"), "site").write_csv(OUT).set_parallelism(3)
plan = env.plan()
`, 3)
		total := 0
		for _, p := range parts {
			for _, n := range p {
				total += n
			}
		}
		if total != 2000 {
			t.Errorf("counts add up to %d, want 2000", total)
		}
	})
}

func TestForwardMismatchFailNamesBothOperators(t *testing.T) {
	jp := testkit.JobPlan(t, pipelinePrelude+`
env = fg.Environment(config={"pipeline.forward-mismatch": "fail"})
src = env.datagen(rows=10, schema={"id": "int64"}).set_parallelism(2)
src.select("id").write_csv(OUT).set_parallelism(3)
plan = env.plan()
`, t.TempDir())
	_, err := plan.PlanWire(jp, plan.Options{})
	if err == nil {
		t.Fatal("planning succeeded under pipeline.forward-mismatch=fail")
	}
	for _, want := range []string{"datagen", "p=2", "p=3", "pipeline.forward-mismatch"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
}

// assertPointwise checks that 2 producers fed 4 consumers pointwise:
// producer 0 (ids 0..999) consumers 0 and 1, producer 1 the others.
func assertPointwise(t *testing.T, parts [][]int) {
	t.Helper()
	assertAllRows(t, parts, 2000)
	for i, p := range parts {
		for _, id := range p {
			if (i < 2) != (id < 1000) {
				t.Fatalf("id %d reached subtask %d, outside its producer's subset", id, i)
			}
		}
	}
}

func assertAllRows(t *testing.T, parts [][]int, n int) {
	t.Helper()
	var all []int
	for _, p := range parts {
		all = append(all, p...)
	}
	slices.Sort(all)
	if len(all) != n || all[0] != 0 || all[n-1] != n-1 || len(slices.Compact(all)) != n {
		t.Fatalf("got %d rows (want each of 0..%d once)", len(all), n-1)
	}
}
