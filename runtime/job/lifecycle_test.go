package job

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/integration/testkit"
	"github.com/flinkgo/flinkgo/internal/arrowipc"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
	"github.com/flinkgo/flinkgo/udf/bridge/bridgetest/goworker"
)

// TestMain first lets the test binary serve as the Go worker of
// udf_test.go (goworker re-runs it as one), then runs the tests, stops the
// Kafka broker of kafka_test.go if one started, and checks for leaks.
func TestMain(m *testing.M) {
	goworker.Main()
	testkit.KafkaMain(m)
}

// datagenToCollect plans datagen(rows) → collect at parallelism 2; rows 0
// is unbounded.
func datagenToCollect(t *testing.T, rows int64) *plan.Graph {
	t.Helper()
	schema, err := arrowipc.EncodeSchema(arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "x", Type: arrow.PrimitiveTypes.Float64},
	}, nil))
	if err != nil {
		t.Fatal(err)
	}
	src := &planpb.Node{Id: 1, Name: "datagen", OutputSchema: schema, Kind: &planpb.Node_Source{Source: &planpb.Source{
		Kind: &planpb.Source_Datagen{Datagen: &planpb.DatagenSource{Rows: rows}},
	}}}
	sink := &planpb.Node{Id: 2, Name: "collect", OutputSchema: schema, Inputs: []*planpb.Input{{Node: 1}},
		Kind: &planpb.Node_Sink{Sink: &planpb.Sink{Kind: &planpb.Sink_Collect{Collect: &planpb.CollectSink{}}}}}
	g, err := plan.PlanWire(&planpb.JobPlan{Name: "lifecycle", DefaultParallelism: 2, Nodes: []*planpb.Node{src, sink}}, plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// run runs g, calling collect on every collected batch, and returns the
// states the observer saw, the job's history and its error.
func run(t *testing.T, ctx context.Context, g *plan.Graph, collect func(arrow.RecordBatch) error) (seen, history []JobState, err error) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	var observed []JobState // written by one goroutine at a time: moves are serialized
	j, err := Start(ctx, g, Options{
		Allocator: mem,
		Collect: func(_ *plan.Operator, _ int, b arrow.RecordBatch) error {
			defer b.Release()
			return collect(b)
		},
		OnStateChange: func(c StateChange) { observed = append(observed, c.State) },
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = j.Wait()
	for _, c := range j.History() {
		history = append(history, c.State)
	}
	if s := j.State(); s != history[len(history)-1] || !s.Terminal() {
		t.Errorf("State() = %s at the end, history %v", s, history)
	}
	return observed, history, err
}

func TestJobStates(t *testing.T) {
	t.Run("finished", func(t *testing.T) {
		seen, history, err := run(t, context.Background(), datagenToCollect(t, 1000), func(arrow.RecordBatch) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		wantStates(t, seen, history, Running, Finished)
	})
	t.Run("canceled", func(t *testing.T) {
		ctx, cancel := context.WithCancelCause(context.Background())
		defer cancel(nil)
		cause := errors.New("canceled by the test")
		seen, history, err := run(t, ctx, datagenToCollect(t, 0), func(arrow.RecordBatch) error {
			cancel(cause)
			return nil
		})
		if !errors.Is(err, cause) {
			t.Errorf("err = %v, want the cancel cause", err)
		}
		wantStates(t, seen, history, Running, Canceling, Canceled)
	})
	t.Run("failed", func(t *testing.T) {
		boom := errors.New("sink refused the batch")
		seen, history, err := run(t, context.Background(), datagenToCollect(t, 0), func(arrow.RecordBatch) error { return boom })
		var taskErr *TaskError
		if !errors.Is(err, boom) || !errors.As(err, &taskErr) || taskErr.Operator != "collect" {
			t.Errorf("err = %v, want the sink's failure naming its operator", err)
		}
		wantStates(t, seen, history, Running, Failing, Failed)
	})
	t.Run("failure after cancel stays canceled", func(t *testing.T) {
		ctx, cancel := context.WithCancelCause(context.Background())
		defer cancel(nil)
		cause := errors.New("canceled by the test")
		seen, history, err := run(t, ctx, datagenToCollect(t, 0), func(arrow.RecordBatch) error {
			cancel(cause)
			return errors.New("a task erroring while it is canceled")
		})
		if err == nil {
			t.Fatal("want an error")
		}
		wantStates(t, seen, history, Running, Canceling, Canceled)
	})
}

func wantStates(t *testing.T, seen, history []JobState, want ...JobState) {
	t.Helper()
	if !slices.Equal(seen, want) {
		t.Errorf("observer saw %v, want %v", seen, want)
	}
	if !slices.Equal(history, append([]JobState{Created}, want...)) {
		t.Errorf("history %v, want Created then %v", history, want)
	}
}
