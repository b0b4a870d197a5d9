package job

import (
	"context"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/internal/arrowipc"
	"github.com/flinkgo/flinkgo/runtime/config"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
	"github.com/flinkgo/flinkgo/udf/bridge/bridgetest"
	"github.com/flinkgo/flinkgo/udf/bridge/bridgetest/goworker"
)

// A checkpoint rescale of one vertex keeps an earlier in-place resize of
// another: the UDF operator grown to 3 workers over its 2 subtasks runs 3
// again after the restart that rescales the sink, and the rescale's
// history says so (it said 3 -> 2 workers, as if the resize were undone).
func TestCheckpointRescaleKeepsAnInPlaceResize(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	i64 := func(name string) arrow.Field {
		return arrow.Field{Name: name, Type: arrow.PrimitiveTypes.Int64, Nullable: true}
	}
	idSchema, err := arrowipc.EncodeSchema(arrow.NewSchema([]arrow.Field{i64("id")}, nil))
	if err != nil {
		t.Fatal(err)
	}
	outSchema, err := arrowipc.EncodeSchema(arrow.NewSchema([]arrow.Field{i64("id"), i64("y")}, nil))
	if err != nil {
		t.Fatal(err)
	}
	call := &planpb.Expr{Kind: &planpb.Expr_Udf{Udf: &planpb.UdfExpr{
		Udf: goworker.UDF("affine", goworker.Affine, arrow.PrimitiveTypes.Int64), Args: []*planpb.Expr{columnExpr("id")}}}}
	rebalance := &planpb.Partitioning{Kind: planpb.Partitioning_REBALANCE}
	jp := &planpb.JobPlan{Name: "resized", Config: checkpointConfig(t.TempDir(), config.ConfigRescaleCooldown, "0 ms"), Nodes: []*planpb.Node{
		{Id: 1, Uid: "numbers", Name: "datagen", OutputSchema: idSchema, Parallelism: 1,
			Kind: &planpb.Node_Source{Source: &planpb.Source{Kind: &planpb.Source_Datagen{Datagen: &planpb.DatagenSource{RowsPerSecond: 2000}}}}},
		{Id: 2, Uid: "scored", Name: "with_column(y)", OutputSchema: outSchema, Parallelism: 2,
			Inputs: []*planpb.Input{{Node: 1, Partitioning: rebalance}},
			Kind:   &planpb.Node_Select{Select: &planpb.Select{Columns: []*planpb.NamedExpr{{Name: "id", Expr: columnExpr("id")}, {Name: "y", Expr: call}}}}},
		{Id: 3, Uid: "files", Name: "write_csv", OutputSchema: outSchema, Parallelism: 1,
			Inputs: []*planpb.Input{{Node: 2, Partitioning: rebalance}},
			Kind:   &planpb.Node_Sink{Sink: &planpb.Sink{Kind: &planpb.Sink_File{File: &planpb.FileSink{Format: planpb.FileSource_CSV, Path: t.TempDir()}}}}},
	}}
	g, err := plan.PlanWire(jp, plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The server's Replan: the client's plan at the asked parallelism.
	replan := func(p map[string]int) (*plan.Graph, error) {
		return plan.PlanWire(jp, plan.Options{Parallelism: p, RestoredMaxParallelism: g.MaxParallelism})
	}
	udf := ""
	for _, op := range g.Operators {
		if op.Kind == plan.KindUDF {
			udf = op.UID
		}
	}
	made := make(chan *bridgetest.Runner, 64)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	j, err := Start(ctx, g, Options{Allocator: mem, SourceBatchRows: 50, NewRunner: fakeAffine(made, nil), Replan: replan})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		cancel()
		_, _ = j.Wait()
	}()

	grown, err := j.Rescale(map[string]int{"scored": 3})
	if err != nil || grown.Mode != ModeInPlace {
		t.Fatalf("growing the UDF to 3 workers: %+v, %v", grown, err)
	}
	if done := waitForRescale(t, j, grown.ID); done.Status != RescaleCompleted {
		t.Fatalf("growing the UDF to 3 workers: %+v", done)
	}
	waitForCheckpoints(t, j, 1)
	sink, err := j.Rescale(map[string]int{"files": 2})
	if err != nil || sink.Mode != ModeCheckpoint {
		t.Fatalf("rescaling the sink: %+v, %v", sink, err)
	}
	done := waitForRescale(t, j, sink.ID)
	if done.Status != RescaleCompleted {
		t.Fatalf("rescaling the sink: %+v", done)
	}
	for _, v := range done.Vertices {
		if v.UID == udf && (v.Before != 2 || v.After != 2 || v.WorkersBefore != 3 || v.WorkersAfter != 3) {
			t.Errorf("the sink's rescale shows the UDF as %+v: want parallelism 2 -> 2, workers 3 -> 3 (kept)", v)
		}
	}
	waitUntil(t, "the UDF to run 3 workers after the restart", func() (bool, string) {
		w := j.Workers(udf)
		return w == 3 && j.workers.Settled(udf, 3), fmt.Sprintf("it runs %d", w)
	})
}
