package plan

import (
	"testing"

	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
)

// rescalable: datagen → select with a UDF (uid "score": select, udf and
// select operators) → keyed count (uid "counts") → collect.
func rescalable() *planpb.JobPlan {
	f := spec("f", 0, 0, false)
	return jobWith(map[string]string{ConfigMaxParallelism: "8"},
		source(1, "numbers", uid("numbers"), par(2)),
		selectNode(2, "score", from(1), []*planpb.NamedExpr{as("k", col("id")), as("s", call(f, fn("plus", col("id"), lit(1))))}, uid("score"), par(2)),
		keyedAgg(3, "counts", from(2), []string{"k"}, uid("counts"), par(2)),
		sink(4, "out", from(3), uid("out"), par(1)),
	)
}

func TestParallelismByUID(t *testing.T) {
	g := mustPlan(t, rescalable(), Options{Parallelism: map[string]int{"score": 4, "counts": 3}})
	for _, o := range g.Operators {
		want := map[int]int{1: 2, 2: 4, 3: 3, 4: 1}[o.NodeID]
		if o.Parallelism != want {
			t.Errorf("%s: parallelism %d, want %d", o.UID, o.Parallelism, want)
		}
		if o.NodeID == 2 || o.NodeID == 3 {
			if o.ParallelismFrom != FromRescale {
				t.Errorf("%s: parallelism from %q, want %q", o.UID, o.ParallelismFrom, FromRescale)
			}
		}
	}
	// The node's operators stay chained; the keyed input stays hashed.
	if e := edge(t, g, "score/post", "counts"); e.Partitioning != PartitionHash {
		t.Errorf("keyed input %v, want HASH", e.Partitioning)
	}
	// An operator's own uid sets that operator only.
	g = mustPlan(t, rescalable(), Options{Parallelism: map[string]int{"score/udf-0": 3}})
	if p := op(t, g, "score/udf-0").Parallelism; p != 3 {
		t.Errorf("udf operator parallelism %d, want 3", p)
	}
	if p := op(t, g, "score/pre").Parallelism; p != 2 {
		t.Errorf("its select's parallelism %d, want 2 (unchanged)", p)
	}
}

func TestParallelismByUIDRefusals(t *testing.T) {
	msg := planError(t, rescalable(), Options{Parallelism: map[string]int{"nope": 2}})
	wantContains(t, msg, `no operator or node has the uid "nope"`, `"counts"`, `"score"`, `"score/udf-0"`)
	msg = planError(t, rescalable(), Options{Parallelism: map[string]int{"counts": 0}})
	wantContains(t, msg, `uid "counts" is 0`)
	msg = planError(t, rescalable(), Options{Parallelism: map[string]int{"counts": 16}, RestoredMaxParallelism: 8})
	wantContains(t, msg, "parallelism 16 (rescale), above the max parallelism 8")
}
