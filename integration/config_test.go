package integration_test

import (
	"context"
	"maps"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/integration/testkit"
	"github.com/flinkgo/flinkgo/runtime/job"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/runtime/proto/jobpb"
)

// batchSizesPipeline sends 5000 rows through a map_batches function, in
// batches of at most 300 rows, that answers each batch with its row
// count. A batch never spans two bundles, so the counts show where
// bundles end. Bundles never end on time (1 h), so the counts depend on
// rows alone.
const batchSizesPipeline = pipelinePrelude + `
def rows(batch):
    return pd.DataFrame({"rows": [len(batch)]}, dtype="int64")

env = fg.Environment(parallelism=1, config={
    "python.fn-execution.arrow.batch.size": "300",
    "python.fn-execution.bundle.time": "1 h",
    BUNDLE_SIZE
})
env.datagen(rows=5000, schema={"id": "int64"}).map_batches(rows, schema={"rows": "int64"}).write_csv(OUT)
plan = env.plan("bundles")
`

// batchSizes runs batchSizesPipeline with the bundle size entry given
// ("" for none) and returns how many batches of each size the Python
// function saw.
func batchSizes(t *testing.T, bundleSizeEntry string) map[int64]int {
	t.Helper()
	src := strings.Replace(batchSizesPipeline, "BUNDLE_SIZE", bundleSizeEntry, 1)
	jp := testkit.JobPlan(t, src, t.TempDir())
	collectInstead(jp)
	g, err := plan.PlanWire(jp, plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	opts := runOptions(t, mem)
	var mu sync.Mutex
	sizes := map[int64]int{}
	opts.Collect = func(_ *plan.Operator, _ int, b arrow.RecordBatch) error {
		defer b.Release()
		mu.Lock()
		defer mu.Unlock()
		for _, n := range b.Column(0).(*array.Int64).Int64Values() {
			sizes[n]++
		}
		return nil
	}
	if _, err := job.Run(context.Background(), g, opts); err != nil {
		t.Fatalf("%v\n%s", err, g.Explain())
	}
	return sizes
}

// python.fn-execution.bundle.size reaches the UDF operator: with bundles
// of 1000 rows each bundle goes out as 300+300+300+100; without it the
// 5000 rows are one bundle, 16 batches of 300 and the last 200.
func TestBundleSizeFromTheConfigCutsBundles(t *testing.T) {
	testkit.NoLeakedWorkers(t)
	if got, want := batchSizes(t, `"python.fn-execution.bundle.size": "1000",`), map[int64]int{300: 15, 100: 5}; !maps.Equal(got, want) {
		t.Errorf("bundle.size=1000: batch sizes %v, want %v", got, want)
	}
	if got, want := batchSizes(t, ""), map[int64]int{300: 16, 200: 1}; !maps.Equal(got, want) {
		t.Errorf("default bundle size: batch sizes %v, want %v", got, want)
	}
}

// A job with an unknown key fails at submission, through Explain and
// Execute alike, with the key and its close match; nothing runs.
func TestServerRefusesUnknownConfigKeys(t *testing.T) {
	testkit.NoLeakedWorkers(t)
	client := startServer(t, memory.NewGoAllocator())
	jp := testkit.JobPlan(t, pipelinePrelude+`
env = fg.Environment(config={
    "python.fn-execution.bundle.sise": "1000",
    "execution.checkpointing.interval": "often",
})
env.from_pandas(readings).write_csv(OUT)
plan = env.plan("typo")
`, t.TempDir())
	wants := []string{
		`unknown key "python.fn-execution.bundle.sise": did you mean "python.fn-execution.bundle.size"?`,
		`execution.checkpointing.interval="often": expected a duration`,
	}
	explained, err := client.Explain(context.Background(), &jobpb.ExplainRequest{Plan: jp})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range wants {
		if !strings.Contains(explained.GetError(), w) {
			t.Errorf("explain error %q lacks %q", explained.GetError(), w)
		}
	}
	stream, err := client.Execute(context.Background(), &jobpb.ExecuteRequest{Plan: jp})
	if err != nil {
		t.Fatal(err)
	}
	evs := events(t, stream)
	if len(evs) != 1 {
		t.Fatalf("want only the failure, got %v", evs)
	}
	fin := evs[0].GetFinished()
	if fin.GetState() != jobpb.JobFinished_FAILED || fin.GetError().GetKind() != "PLAN" {
		t.Fatalf("want a PLAN failure, got %v", fin)
	}
	for _, w := range wants {
		if !strings.Contains(fin.GetError().GetMessage(), w) {
			t.Errorf("execute error %q lacks %q", fin.GetError().GetMessage(), w)
		}
	}
}
