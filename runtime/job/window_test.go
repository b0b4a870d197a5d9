package job

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/internal/arrowipc"
	"github.com/flinkgo/flinkgo/runtime/config"
	"github.com/flinkgo/flinkgo/runtime/operators"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
)

const windowKeys = 7

// tumblingCounts plans datagen(rows) of (id, ts = id ms) → k = id % 7 →
// key_by(k).window(tumble(ts, 1 s)).agg(count, sum(id)) → CSV files in out
// (collect when out is ""), the source at parallelism 1 and the rest at p.
func tumblingCounts(t *testing.T, rows int64, rowsPerSecond float64, p int, out string, cfg map[string]string) *plan.Graph {
	t.Helper()
	i64 := func(name string) arrow.Field {
		return arrow.Field{Name: name, Type: arrow.PrimitiveTypes.Int64, Nullable: true}
	}
	ts := &arrow.TimestampType{Unit: arrow.Millisecond}
	encode := func(fields ...arrow.Field) []byte {
		b, err := arrowipc.EncodeSchema(arrow.NewSchema(fields, nil))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	source := encode(i64("id"), arrow.Field{Name: "ts", Type: ts})
	keyed := encode(i64("id"), arrow.Field{Name: "ts", Type: ts}, i64("k"))
	windowed := encode(i64("k"), arrow.Field{Name: "window_start", Type: ts}, arrow.Field{Name: "window_end", Type: ts}, i64("n"), i64("total"))
	modulo := &planpb.Expr{Kind: &planpb.Expr_Call{Call: &planpb.Call{Function: "modulo", Args: []*planpb.Expr{
		columnExpr("id"), {Kind: &planpb.Expr_Literal{Literal: &planpb.Literal{Value: &planpb.Literal_IntValue{IntValue: windowKeys}}}},
	}}}}
	sink := &planpb.Sink{Kind: &planpb.Sink_Collect{Collect: &planpb.CollectSink{}}}
	if out != "" {
		sink = &planpb.Sink{Kind: &planpb.Sink_File{File: &planpb.FileSink{Format: planpb.FileSource_CSV, Path: out}}}
	}
	nodes := []*planpb.Node{
		{Id: 1, Uid: "numbers", Name: "datagen", OutputSchema: source, Parallelism: 1,
			Kind: &planpb.Node_Source{Source: &planpb.Source{Kind: &planpb.Source_Datagen{Datagen: &planpb.DatagenSource{Rows: rows, RowsPerSecond: rowsPerSecond}}}}},
		{Id: 2, Uid: "keyed", Name: "with_column(k)", OutputSchema: keyed, Parallelism: 1, Inputs: []*planpb.Input{{Node: 1}},
			Kind: &planpb.Node_Select{Select: &planpb.Select{Columns: []*planpb.NamedExpr{
				{Name: "id", Expr: columnExpr("id")}, {Name: "ts", Expr: columnExpr("ts")}, {Name: "k", Expr: modulo}}}}},
		{Id: 3, Uid: "windows", Name: "window", OutputSchema: windowed, Inputs: []*planpb.Input{{Node: 2}},
			Kind: &planpb.Node_WindowAggregate{WindowAggregate: &planpb.WindowAggregate{
				TimeColumn: "ts", Kind: planpb.WindowAggregate_TUMBLE, SizeMs: 1000, Keys: []string{"k"},
				Aggregates: []*planpb.Aggregate{{Function: "count", Name: "n"}, {Function: "sum", Column: "id", Name: "total"}}}}},
		{Id: 4, Uid: "out", Name: "out", OutputSchema: windowed, Inputs: []*planpb.Input{{Node: 3}}, Kind: &planpb.Node_Sink{Sink: sink}},
	}
	g, err := plan.PlanWire(&planpb.JobPlan{Name: "windows", DefaultParallelism: int32(p), Config: cfg, Nodes: nodes}, plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// wantTumblingCounts is every (k, count, sum of ids) of tumblingCounts over
// ids [0, rows), sorted.
func wantTumblingCounts(rows int64) []string {
	type wk struct{ w, k int64 }
	n, sum := map[wk]int64{}, map[wk]int64{}
	for id := range rows {
		key := wk{id / 1000, id % windowKeys}
		n[key]++
		sum[key] += id
	}
	var out []string
	for key := range n {
		out = append(out, fmt.Sprintf("%d %d %d", key.k, n[key], sum[key]))
	}
	slices.Sort(out)
	return out
}

// Tumbling windows per key, at parallelism 1 and 3: the end of input fires
// every window, each once.
func TestWindowAggregateTumblingCounts(t *testing.T) {
	const rows = 20_000
	for _, p := range []int{1, 3} {
		t.Run(fmt.Sprintf("parallelism %d", p), func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			got := make(chan string, rows)
			collect := func(_ *plan.Operator, _ int, b arrow.RecordBatch) error {
				defer b.Release()
				for i := range int(b.NumRows()) {
					got <- fmt.Sprintf("%d %d %d", b.Column(0).(*array.Int64).Value(i), b.Column(3).(*array.Int64).Value(i), b.Column(4).(*array.Int64).Value(i))
				}
				return nil
			}
			if _, err := Run(context.Background(), tumblingCounts(t, rows, 0, p, "", nil), Options{Allocator: mem, SourceBatchRows: 333, Collect: collect}); err != nil {
				t.Fatal(err)
			}
			close(got)
			var lines []string
			for l := range got {
				lines = append(lines, l)
			}
			slices.Sort(lines)
			if want := wantTumblingCounts(rows); !slices.Equal(lines, want) {
				t.Fatalf("%d window rows, want %d; first %v, want %v", len(lines), len(want), lines[:min(3, len(lines))], want[:3])
			}
		})
	}
}

// The windows in flight are keyed state: a job stopped with a savepoint at
// parallelism 2 and restored at 1 and at 3 gives every window once, with
// the rows of before and after the savepoint. The first job's source holds
// after 10 250 rows (a window's rows on both sides of the savepoint), so
// the savepoint finds it running.
func TestWindowAggregateRestoresAtAnotherParallelism(t *testing.T) {
	const rows = 20_000
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	for _, q := range []int{1, 3} {
		t.Run(fmt.Sprintf("2 to %d", q), func(t *testing.T) {
			dir, out, savepoints := t.TempDir(), t.TempDir(), t.TempDir()
			cfg := checkpointConfig(dir, config.ConfigSavepointDir, savepoints)
			// A cache of 4 keys: checkpoints move keys out of memory.
			reg, held := heldSources(t, operators.Options{SourceBatchRows: 500, KeyedCacheGroups: 4}, 10_250)
			j, err := Start(context.Background(), tumblingCounts(t, rows, 0, 2, out, cfg), Options{Allocator: mem, Registry: reg})
			if err != nil {
				t.Fatal(err)
			}
			waitHeld(t, j, held, 1)
			restoreFromSavepoint(t, j, cfg, mem, func() *plan.Graph { return tumblingCounts(t, rows, 0, q, out, cfg) })
			var got []string
			for _, r := range publishedRows(t, out) {
				got = append(got, fmt.Sprintf("%s %s %s", r[0], r[3], r[4]))
			}
			slices.Sort(got)
			if want := wantTumblingCounts(rows); !slices.Equal(got, want) {
				t.Fatalf("%d window rows, want %d; first %v, want %v", len(got), len(want), got[:min(3, len(got))], want[:3])
			}
		})
	}
}
