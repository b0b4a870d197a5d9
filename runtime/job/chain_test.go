package job

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
)

// A chain runs in one goroutine per subtask: datagen → filter → collect at
// parallelism 2 is 2 tasks, and a rebalance before the sink splits it.
func TestChainedOperatorsRunInOneTask(t *testing.T) {
	for _, tc := range []struct {
		name      string
		sinkInput planpb.Partitioning_Kind
		wantTasks int
	}{
		{"forward", planpb.Partitioning_FORWARD, 2},
		{"rebalance", planpb.Partitioning_REBALANCE, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := datagenToCollect(t, 1000)
			even := &planpb.Expr{Kind: &planpb.Expr_Call{Call: &planpb.Call{Function: "equal", Args: []*planpb.Expr{
				{Kind: &planpb.Expr_Call{Call: &planpb.Call{Function: "modulo", Args: []*planpb.Expr{
					columnExpr("id"), {Kind: &planpb.Expr_Literal{Literal: &planpb.Literal{Value: &planpb.Literal_IntValue{IntValue: 2}}}},
				}}}},
				{Kind: &planpb.Expr_Literal{Literal: &planpb.Literal{Value: &planpb.Literal_IntValue{IntValue: 0}}}},
			}}}}
			g = replan(t, g, func(j *planpb.JobPlan) {
				src, sink := j.Nodes[0], j.Nodes[1]
				filter := &planpb.Node{Id: 3, Name: "even", OutputSchema: src.OutputSchema, Inputs: []*planpb.Input{{Node: 1}},
					Kind: &planpb.Node_Filter{Filter: &planpb.Filter{Predicate: even}}}
				sink.Inputs = []*planpb.Input{{Node: 3, Partitioning: &planpb.Partitioning{Kind: tc.sinkInput}}}
				j.Nodes = []*planpb.Node{src, filter, sink}
			})
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			var ids []int64 // from the sink tasks, through the channel
			collected := make(chan []int64, 8)
			j, err := Start(context.Background(), g, Options{Allocator: mem, Collect: func(_ *plan.Operator, _ int, b arrow.RecordBatch) error {
				defer b.Release()
				collected <- append([]int64(nil), b.Column(0).(*array.Int64).Int64Values()...)
				return nil
			}})
			if err != nil {
				t.Fatal(err)
			}
			go func() { _, _ = j.Wait(); close(collected) }()
			for c := range collected {
				ids = append(ids, c...)
			}
			m, err := j.Wait()
			if err != nil {
				t.Fatal(err)
			}
			j.mu.Lock()
			tasks := j.mu.tasks
			j.mu.Unlock()
			if tasks != tc.wantTasks {
				t.Errorf("%d tasks, want %d\n%s", tasks, tc.wantTasks, g.Explain())
			}
			seen := map[int64]bool{}
			for _, id := range ids {
				if id%2 != 0 || seen[id] {
					t.Fatalf("row %d collected twice or not even", id)
				}
				seen[id] = true
			}
			if len(seen) != 500 {
				t.Errorf("collected %d rows, want 500", len(seen))
			}
			want := map[string][2]int64{"datagen": {1000, 1000}, "even": {1000, 500}, "collect": {500, 0}}
			for _, op := range m.Operators {
				if got := [2]int64{op.RowsIn, op.RowsOut}; got != want[op.Name] {
					t.Errorf("%s: rows in/out %v, want %v", op.Name, got, want[op.Name])
				}
			}
		})
	}
}

// replan edits the plan g came from and plans it again.
func replan(t *testing.T, g *plan.Graph, edit func(*planpb.JobPlan)) *plan.Graph {
	t.Helper()
	var nodes []*planpb.Node
	for _, op := range g.Operators {
		nodes = append(nodes, op.Node)
	}
	j := &planpb.JobPlan{Name: g.Name, DefaultParallelism: int32(g.DefaultParallelism), Config: g.Config, Nodes: nodes}
	edit(j)
	out, err := plan.Plan(j, plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
