package job

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/internal/arrowipc"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
	"github.com/flinkgo/flinkgo/udf/bridge"
	"github.com/flinkgo/flinkgo/udf/bridge/bridgetest"
	"github.com/flinkgo/flinkgo/udf/bridge/bridgetest/goworker"
	"github.com/flinkgo/flinkgo/udf/bridge/pluginrunner"
	"github.com/flinkgo/flinkgo/udf/bridge/proto/workerpb"
)

// The UDF operator, tested without Python: against the Go worker (a real
// worker process, goworker) and against the fake runner of bridgetest
// (through Options.NewRunner), so its wiring, results and cancel path are
// covered where no virtualenv exists.

// affineJob plans datagen(rows, rows/s) → select id, y = udf(id) → collect,
// the UDF at parallelism p.
func affineJob(t *testing.T, spec *workerpb.UdfSpec, rows int64, rowsPerSecond float64, p int) *plan.Graph {
	t.Helper()
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
	call := &planpb.Expr{Kind: &planpb.Expr_Udf{Udf: &planpb.UdfExpr{Udf: spec, Args: []*planpb.Expr{columnExpr("id")}}}}
	nodes := []*planpb.Node{
		{Id: 1, Uid: "numbers", Name: "datagen", OutputSchema: idSchema, Parallelism: 1,
			Kind: &planpb.Node_Source{Source: &planpb.Source{Kind: &planpb.Source_Datagen{Datagen: &planpb.DatagenSource{Rows: rows, RowsPerSecond: rowsPerSecond}}}}},
		{Id: 2, Uid: "scored", Name: "with_column(y)", OutputSchema: outSchema, Inputs: []*planpb.Input{{Node: 1}},
			Kind: &planpb.Node_Select{Select: &planpb.Select{Columns: []*planpb.NamedExpr{{Name: "id", Expr: columnExpr("id")}, {Name: "y", Expr: call}}}}},
		{Id: 3, Uid: "out", Name: "collect", OutputSchema: outSchema, Inputs: []*planpb.Input{{Node: 2}},
			Kind: &planpb.Node_Sink{Sink: &planpb.Sink{Kind: &planpb.Sink_Collect{Collect: &planpb.CollectSink{}}}}},
	}
	g, err := plan.PlanWire(&planpb.JobPlan{Name: "affine", DefaultParallelism: int32(p), Nodes: nodes}, plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// collectPairs returns a Collect option gathering (id, y) rows, and a
// function reading them once the job ended.
func collectPairs() (func(*plan.Operator, int, arrow.RecordBatch) error, func() [][2]int64) {
	rows := make(chan [2]int64, 1<<16)
	collect := func(_ *plan.Operator, _ int, b arrow.RecordBatch) error {
		defer b.Release()
		ids, ys := b.Column(0).(*array.Int64), b.Column(1).(*array.Int64)
		for i := range int(b.NumRows()) {
			rows <- [2]int64{ids.Value(i), ys.Value(i)}
		}
		return nil
	}
	return collect, func() [][2]int64 {
		close(rows)
		var got [][2]int64
		for r := range rows {
			got = append(got, r)
		}
		slices.SortFunc(got, func(a, b [2]int64) int { return int(a[0] - b[0]) })
		return got
	}
}

func TestUDFOperatorOnTheGoWorker(t *testing.T) {
	for _, p := range []int{1, 2} {
		t.Run(fmt.Sprintf("parallelism %d", p), func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			python, env := goworker.Command(goworker.Serve)
			collect, results := collectPairs()
			const rows = 5000
			_, err := Run(context.Background(), affineJob(t, goworker.UDF("affine", goworker.Affine, arrow.PrimitiveTypes.Int64), rows, 0, p),
				Options{Allocator: mem, SourceBatchRows: 300, Collect: collect, Runner: pluginrunner.Options{Python: python, Env: env}})
			if err != nil {
				t.Fatal(err)
			}
			got := results()
			if len(got) != rows {
				t.Fatalf("%d rows, want %d", len(got), rows)
			}
			for i, r := range got {
				if r[0] != int64(i) || r[1] != 2*r[0]+1 {
					t.Fatalf("row %d: id %d, y %d; want id %d, y %d", i, r[0], r[1], i, 2*i+1)
				}
			}
		})
	}
}

// fakeAffine is Options.NewRunner giving fake runners that compute 2x+1 of
// the UDF's argument in the Go process; each runner is sent on made.
func fakeAffine(made chan<- *bridgetest.Runner, configure func(*bridgetest.Runner)) func(pluginrunner.Options) (bridge.Runner, error) {
	return func(o pluginrunner.Options) (bridge.Runner, error) {
		r := bridgetest.NewRunner(nil)
		arg := o.InputSchema.FieldIndices(o.Calls[0].GetArgs()[0])[0]
		r.Transform = func(_ int64, b arrow.RecordBatch) (arrow.RecordBatch, error) {
			in := b.Column(arg).(*array.Int64)
			out := array.NewInt64Builder(o.Allocator)
			defer out.Release()
			for i := range in.Len() {
				out.Append(2*in.Value(i) + 1)
			}
			col := out.NewArray()
			defer col.Release()
			return array.NewRecordBatch(o.OutputSchema, []arrow.Array{col}, b.NumRows()), nil
		}
		if configure != nil {
			configure(r)
		}
		made <- r
		return bridgetest.Cancelable{Runner: r}, nil
	}
}

func TestUDFOperatorOnAFakeRunner(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	made := make(chan *bridgetest.Runner, 8)
	collect, results := collectPairs()
	const rows = 2000
	_, err := Run(context.Background(), affineJob(t, goworker.UDF("affine", goworker.Affine, arrow.PrimitiveTypes.Int64), rows, 0, 2),
		Options{Allocator: mem, SourceBatchRows: 100, Collect: collect, NewRunner: fakeAffine(made, nil)})
	if err != nil {
		t.Fatal(err)
	}
	got := results()
	if len(got) != rows || got[rows-1] != [2]int64{rows - 1, 2*(rows-1) + 1} {
		t.Fatalf("%d rows, last %v", len(got), got[len(got)-1])
	}
	close(made)
	for r := range made {
		// The graceful path: flushed, closed, never canceled.
		if r.Log().Count("runner.Close") != 1 || r.Log().Count("runner.Cancel") != 0 {
			t.Errorf("runner calls %v: want one Close and no Cancel", r.Log().Snapshot())
		}
	}
}

// A canceled job takes the UDF operator's cancel path while its flush is
// stuck on the worker: Cancel, never Close, and Run returns.
func TestUDFOperatorCancelNeverWaitsOnAStuckFlush(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	made := make(chan *bridgetest.Runner, 8)
	collect, results := collectPairs()
	defer results()
	ctx, cancel := context.WithCancelCause(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := Run(ctx, affineJob(t, goworker.UDF("affine", goworker.Affine, arrow.PrimitiveTypes.Int64), 0, 5000, 1),
			Options{Allocator: mem, SourceBatchRows: 100, Collect: collect, BundleTime: 20 * time.Millisecond,
				// Results wait for the flush, so the bundle's deadline timer
				// always finishes it by a Flush, which then hangs.
				NewRunner: fakeAffine(made, func(r *bridgetest.Runner) { r.HoldUntilFlush, r.BlockFlush = true, true })})
		done <- err
	}()
	r := <-made
	<-r.FlushStarted() // a bundle's flush is stuck on the worker
	stop := errors.New("test cancels the job")
	cancel(stop)
	if err := <-done; !errors.Is(err, stop) {
		t.Fatalf("Run: %v, want the cancel cause", err)
	}
	if calls := r.Log().Snapshot(); !slices.Contains(calls, "runner.Cancel") || slices.Contains(calls, "runner.Close") {
		t.Fatalf("runner calls %s: want Cancel and no Close", strings.Join(calls, ", "))
	}
}
