package job

import (
	"context"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/internal/arrowipc"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
)

// A checkpointed job whose collect sink joins batches (CollectBatchBytes,
// as the server sets it): every row arrives once, in order, in batches
// larger than the source's, handed over at the barriers too.
func TestCollectJoinsBatchesInACheckpointedJob(t *testing.T) {
	const rows, sourceBatch = 20000, 500
	schema, err := arrowipc.EncodeSchema(arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil))
	if err != nil {
		t.Fatal(err)
	}
	src := &planpb.Node{Id: 1, Uid: "numbers", Name: "datagen", OutputSchema: schema, Parallelism: 1,
		Kind: &planpb.Node_Source{Source: &planpb.Source{Kind: &planpb.Source_Datagen{Datagen: &planpb.DatagenSource{
			Rows: rows, RowsPerSecond: 10000,
		}}}}}
	sink := &planpb.Node{Id: 2, Uid: "collect", Name: "collect", OutputSchema: schema, Parallelism: 1,
		Inputs: []*planpb.Input{{Node: 1}},
		Kind:   &planpb.Node_Sink{Sink: &planpb.Sink{Kind: &planpb.Sink_Collect{Collect: &planpb.CollectSink{}}}}}
	g, err := plan.PlanWire(&planpb.JobPlan{Name: "collect", Config: checkpointConfig(t.TempDir()), Nodes: []*planpb.Node{src, sink}}, plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	var (
		mu      sync.Mutex
		ids     []int64
		largest int64
	)
	j, err := Start(context.Background(), g, Options{
		Allocator: mem, SourceBatchRows: sourceBatch, CollectBatchBytes: 64 << 10,
		Collect: func(_ *plan.Operator, _ int, b arrow.RecordBatch) error {
			defer b.Release()
			mu.Lock()
			defer mu.Unlock()
			ids = append(ids, b.Column(0).(*array.Int64).Int64Values()...)
			largest = max(largest, b.NumRows())
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	waitForCheckpoints(t, j, 2)
	if _, err := j.Wait(); err != nil {
		t.Fatal(err)
	}
	wantExactly(t, ids, rows)
	if largest <= sourceBatch {
		t.Errorf("the largest batch handed over has %d rows: the sink joined none of the %d-row batches", largest, sourceBatch)
	}
}
