package job

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/internal/arrowipc"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
)

// limitPlan is datagen(rows; 0 for endless) at parallelism p → limit(n) →
// collect.
func limitPlan(t *testing.T, rows, n int64, p int, withLimit bool) (*plan.Graph, error) {
	t.Helper()
	schema, err := arrowipc.EncodeSchema(arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil))
	if err != nil {
		t.Fatal(err)
	}
	nodes := []*planpb.Node{{Id: 1, Uid: "numbers", Name: "datagen", OutputSchema: schema,
		Kind: &planpb.Node_Source{Source: &planpb.Source{Kind: &planpb.Source_Datagen{Datagen: &planpb.DatagenSource{Rows: rows}}}}}}
	last := int32(1)
	if withLimit {
		nodes = append(nodes, &planpb.Node{Id: 2, Uid: "first", Name: fmt.Sprintf("limit(%d)", n), OutputSchema: schema,
			Inputs: []*planpb.Input{{Node: 1}}, Kind: &planpb.Node_Limit{Limit: &planpb.Limit{N: n}}})
		last = 2
	}
	nodes = append(nodes, &planpb.Node{Id: 3, Uid: "out", Name: "out", OutputSchema: schema, Inputs: []*planpb.Input{{Node: last}},
		Kind: &planpb.Node_Sink{Sink: &planpb.Sink{Kind: &planpb.Sink_Collect{Collect: &planpb.CollectSink{}}}}})
	return plan.PlanWire(&planpb.JobPlan{Name: "limit", DefaultParallelism: int32(p), Nodes: nodes}, plan.Options{CollectMustEnd: true})
}

// A limit passes exactly n rows and ends the job, over an endless source
// too, at any parallelism; fewer rows than n all pass.
func TestLimitEndsTheJobWithExactlyNRows(t *testing.T) {
	for _, c := range []struct{ rows, n, want int64 }{{0, 5, 5}, {0, 2500, 2500}, {30, 100, 30}} {
		for _, p := range []int{1, 3} {
			t.Run(fmt.Sprintf("rows=%d n=%d p=%d", c.rows, c.n, p), func(t *testing.T) {
				mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
				defer mem.AssertSize(t, 0)
				g, err := limitPlan(t, c.rows, c.n, p, true)
				if err != nil {
					t.Fatal(err)
				}
				var got atomic.Int64
				if _, err := Run(context.Background(), g, Options{Allocator: mem, SourceBatchRows: 100, Collect: func(_ *plan.Operator, _ int, b arrow.RecordBatch) error {
					got.Add(b.NumRows())
					b.Release()
					return nil
				}}); err != nil {
					t.Fatal(err)
				}
				if got.Load() != c.want {
					t.Fatalf("%d rows, want %d", got.Load(), c.want)
				}
			})
		}
	}
}

// Collecting an endless source without a limit is refused at planning.
func TestCollectOfAnEndlessSourceIsRefused(t *testing.T) {
	_, err := limitPlan(t, 0, 0, 2, false)
	if !errors.Is(err, plan.ErrInvalidPlan) || !strings.Contains(err.Error(), `reads an endless source "datagen" (datagen without rows=); collect() would never return: bound it with .limit(n)`) {
		t.Fatalf("got %v", err)
	}
}
