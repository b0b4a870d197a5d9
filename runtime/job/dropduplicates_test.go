package job

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/internal/arrowipc"
	"github.com/flinkgo/flinkgo/runtime/config"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
)

// firstOfEachKey plans datagen(rows) → k = id % 37 →
// drop_duplicates(subset=[k]) → CSV files in out (collect when out is ""),
// the source at parallelism 1 (ids in order) and the rest at p.
func firstOfEachKey(t *testing.T, rows int64, rowsPerSecond float64, p int, out string, cfg map[string]string) *plan.Graph {
	t.Helper()
	i64 := func(name string) arrow.Field {
		return arrow.Field{Name: name, Type: arrow.PrimitiveTypes.Int64, Nullable: true}
	}
	schema, err := arrowipc.EncodeSchema(arrow.NewSchema([]arrow.Field{i64("id"), i64("k")}, nil))
	if err != nil {
		t.Fatal(err)
	}
	idSchema, err := arrowipc.EncodeSchema(arrow.NewSchema([]arrow.Field{i64("id")}, nil))
	if err != nil {
		t.Fatal(err)
	}
	modulo := &planpb.Expr{Kind: &planpb.Expr_Call{Call: &planpb.Call{Function: "modulo", Args: []*planpb.Expr{
		columnExpr("id"), {Kind: &planpb.Expr_Literal{Literal: &planpb.Literal{Value: &planpb.Literal_IntValue{IntValue: aggKeys}}}},
	}}}}
	sink := &planpb.Sink{Kind: &planpb.Sink_Collect{Collect: &planpb.CollectSink{}}}
	if out != "" {
		sink = &planpb.Sink{Kind: &planpb.Sink_File{File: &planpb.FileSink{Format: planpb.FileSource_CSV, Path: out}}}
	}
	nodes := []*planpb.Node{
		{Id: 1, Uid: "numbers", Name: "datagen", OutputSchema: idSchema, Parallelism: 1,
			Kind: &planpb.Node_Source{Source: &planpb.Source{Kind: &planpb.Source_Datagen{Datagen: &planpb.DatagenSource{Rows: rows, RowsPerSecond: rowsPerSecond}}}}},
		{Id: 2, Uid: "keyed", Name: "with_column(k)", OutputSchema: schema, Parallelism: 1, Inputs: []*planpb.Input{{Node: 1}},
			Kind: &planpb.Node_Select{Select: &planpb.Select{Columns: []*planpb.NamedExpr{{Name: "id", Expr: columnExpr("id")}, {Name: "k", Expr: modulo}}}}},
		{Id: 3, Uid: "firsts", Name: "drop_duplicates(k)", OutputSchema: schema, Inputs: []*planpb.Input{{Node: 2}},
			Kind: &planpb.Node_DropDuplicates{DropDuplicates: &planpb.DropDuplicates{Subset: []string{"k"}}}},
		{Id: 4, Uid: "out", Name: "out", OutputSchema: schema, Inputs: []*planpb.Input{{Node: 3}}, Kind: &planpb.Node_Sink{Sink: sink}},
	}
	g, err := plan.PlanWire(&planpb.JobPlan{Name: "dedup", DefaultParallelism: int32(p), Config: cfg, Nodes: nodes}, plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// wantFirstOfEachKey checks that rows (id, k) hold each key once, with
// its first id (id = k).
func wantFirstOfEachKey(t *testing.T, rows [][2]int64) {
	t.Helper()
	seen := map[int64]bool{}
	for _, r := range rows {
		id, k := r[0], r[1]
		if seen[k] || id != k {
			t.Fatalf("row id=%d k=%d: a key twice, or not its first row (%d rows)", id, k, len(rows))
		}
		seen[k] = true
	}
	if len(seen) != aggKeys {
		t.Fatalf("%d keys, want %d", len(seen), aggKeys)
	}
}

// drop_duplicates keeps the first row of each key, at any parallelism.
func TestDropDuplicatesKeepsTheFirstRowOfEachKey(t *testing.T) {
	for _, p := range []int{1, 3} {
		t.Run(fmt.Sprintf("parallelism %d", p), func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			rows := make(chan [2]int64, 10000)
			g := firstOfEachKey(t, 5000, 0, p, "", nil)
			if _, err := Run(context.Background(), g, Options{Allocator: mem, SourceBatchRows: 100, Collect: func(_ *plan.Operator, _ int, b arrow.RecordBatch) error {
				defer b.Release()
				for i := range int(b.NumRows()) {
					rows <- [2]int64{b.Column(0).(*array.Int64).Value(i), b.Column(1).(*array.Int64).Value(i)}
				}
				return nil
			}}); err != nil {
				t.Fatal(err)
			}
			close(rows)
			var got [][2]int64
			for r := range rows {
				got = append(got, r)
			}
			wantFirstOfEachKey(t, got)
		})
	}
}

// The keys seen are keyed state: a job stopped with a savepoint at
// parallelism 2 and restored at 1 and at 3 emits no key twice.
func TestDropDuplicatesRestoresAtAnotherParallelism(t *testing.T) {
	const rows = 20000
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	for _, q := range []int{1, 3} {
		t.Run(fmt.Sprintf("2 to %d", q), func(t *testing.T) {
			dir, out, savepoints := t.TempDir(), t.TempDir(), t.TempDir()
			cfg := checkpointConfig(dir, config.ConfigSavepointDir, savepoints)
			// A cache of 4 keys: checkpoints drop keys from memory, and
			// later rows look them up in the backend.
			j, err := Start(context.Background(), firstOfEachKey(t, rows, 10000, 2, out, cfg), Options{Allocator: mem, SourceBatchRows: 500, KeyedCacheGroups: 4})
			if err != nil {
				t.Fatal(err)
			}
			restoreFromSavepoint(t, j, cfg, mem, func() *plan.Graph { return firstOfEachKey(t, rows, 0, q, out, cfg) })
			var got [][2]int64
			for _, r := range publishedRows(t, out) {
				id, _ := strconv.ParseInt(r[0], 10, 64)
				k, _ := strconv.ParseInt(r[1], 10, 64)
				got = append(got, [2]int64{id, k})
			}
			wantFirstOfEachKey(t, got)
		})
	}
}
