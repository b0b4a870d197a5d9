package job

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/runtime/plan"
)

// A chain runs in one goroutine per subtask: datagen → filter → collect at
// parallelism 2 is 2 tasks, and a rebalance before the sink splits it.
func TestChainedOperatorsRunInOneTask(t *testing.T) {
	for _, tc := range []struct {
		name      string
		sinkInput plan.Partitioning
		wantTasks int
	}{
		{"forward", plan.PartitionForward, 2},
		{"rebalance", plan.PartitionRebalance, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := datagenToCollect(t, 1000)
			even := &plan.Call{Function: "equal", Args: []plan.Expr{
				&plan.Call{Function: "modulo", Args: []plan.Expr{
					&plan.Column{Name: "id"}, &plan.Literal{Kind: plan.LiteralInt, Int: 2},
				}},
				&plan.Literal{Kind: plan.LiteralInt, Int: 0},
			}}
			g = replan(t, g, func(j *plan.JobPlan) {
				src, sink := j.Nodes[0], j.Nodes[1]
				filter := &plan.Node{ID: 3, Name: "even", OutputSchema: src.OutputSchema, Inputs: []*plan.Input{{Node: 1}},
					Kind: plan.KindFilter, Filter: &plan.Filter{Predicate: even}}
				sink.Inputs = []*plan.Input{{Node: 3, Partitioning: tc.sinkInput}}
				j.Nodes = []*plan.Node{src, filter, sink}
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
func replan(t *testing.T, g *plan.Graph, edit func(*plan.JobPlan)) *plan.Graph {
	t.Helper()
	var nodes []*plan.Node
	for _, op := range g.Operators {
		n := *op.Node // edit copies: the graph's nodes are read-only
		nodes = append(nodes, &n)
	}
	j := &plan.JobPlan{Name: g.Name, DefaultParallelism: g.DefaultParallelism, Config: g.Config, Nodes: nodes}
	edit(j)
	out, err := plan.Plan(j, plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
