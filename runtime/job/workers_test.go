package job

import (
	"strings"
	"testing"

	"github.com/flinkgo/flinkgo/runtime/operator"
	"github.com/flinkgo/flinkgo/runtime/plan"
)

func TestOptionsWorkersStartTheOperatorsPools(t *testing.T) {
	g := &plan.Graph{Operators: []*plan.Operator{
		{UID: "src", Kind: plan.KindSource, Parallelism: 1},
		{UID: "score/udf-0", Kind: plan.KindUDF, Parallelism: 2},
	}}
	pools := operator.NewWorkerPools()
	if err := startWorkers(g, pools, map[string]int{"score/udf-0": 5}); err != nil {
		t.Fatal(err)
	}
	if got := []int{pools.Start("score/udf-0", 0, 2), pools.Start("score/udf-0", 1, 2)}; got[0] != 3 || got[1] != 2 {
		t.Fatalf("subtasks start with %v workers, want [3 2]", got)
	}
	for _, tc := range []struct {
		workers map[string]int
		want    string
	}{
		{map[string]int{"src": 2}, `uid "src", which is no UDF or map_batches operator`},
		{map[string]int{"nope": 2}, `uid "nope", which is no UDF`},
		{map[string]int{"score/udf-0": 1}, "1 workers cannot serve its 2 subtasks"},
	} {
		err := startWorkers(g, operator.NewWorkerPools(), tc.workers)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("startWorkers(%v) = %v, want an error containing %q", tc.workers, err, tc.want)
		}
	}
}
