package job

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/internal/arrowipc"
	"github.com/flinkgo/flinkgo/runtime/checkpoint"
	"github.com/flinkgo/flinkgo/runtime/config"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
)

const aggKeys = 37

// keyedSums plans datagen(rows) → k = id % 37 → key_by(k).agg(sum, count,
// min, max, mean of id) → CSV files in out, at parallelism p.
func keyedSums(t *testing.T, rows int64, rowsPerSecond float64, p int, out string, config map[string]string) *plan.Graph {
	t.Helper()
	schema := func(fields ...arrow.Field) []byte {
		b, err := arrowipc.EncodeSchema(arrow.NewSchema(fields, nil))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	i64 := func(name string) arrow.Field {
		return arrow.Field{Name: name, Type: arrow.PrimitiveTypes.Int64, Nullable: true}
	}
	lit := func(v int64) *planpb.Expr {
		return &planpb.Expr{Kind: &planpb.Expr_Literal{Literal: &planpb.Literal{Value: &planpb.Literal_IntValue{IntValue: v}}}}
	}
	nodes := []*planpb.Node{
		{Id: 1, Uid: "numbers", Name: "datagen", OutputSchema: schema(i64("id")),
			Kind: &planpb.Node_Source{Source: &planpb.Source{Kind: &planpb.Source_Datagen{Datagen: &planpb.DatagenSource{Rows: rows, RowsPerSecond: rowsPerSecond}}}}},
		{Id: 2, Uid: "keyed", Name: "with_column(k)", OutputSchema: schema(i64("id"), i64("k")), Inputs: []*planpb.Input{{Node: 1}},
			Kind: &planpb.Node_Select{Select: &planpb.Select{Columns: []*planpb.NamedExpr{
				{Name: "id", Expr: columnExpr("id")},
				{Name: "k", Expr: &planpb.Expr{Kind: &planpb.Expr_Call{Call: &planpb.Call{Function: "modulo", Args: []*planpb.Expr{columnExpr("id"), lit(aggKeys)}}}}},
			}}}},
		{Id: 3, Uid: "sums", Name: "agg", Inputs: []*planpb.Input{{Node: 2, Partitioning: &planpb.Partitioning{Kind: planpb.Partitioning_HASH, Keys: []string{"k"}}}},
			OutputSchema: schema(i64("k"), i64("total"), i64("n"), i64("lo"), i64("hi"), arrow.Field{Name: "avg", Type: arrow.PrimitiveTypes.Float64, Nullable: true}),
			Kind: &planpb.Node_KeyedAggregate{KeyedAggregate: &planpb.KeyedAggregate{Keys: []string{"k"}, Aggregates: []*planpb.Aggregate{
				{Function: "sum", Column: "id", Name: "total"}, {Function: "count", Name: "n"},
				{Function: "min", Column: "id", Name: "lo"}, {Function: "max", Column: "id", Name: "hi"},
				{Function: "mean", Column: "id", Name: "avg"},
			}}}},
		{Id: 4, Uid: "files", Name: "write_csv", Inputs: []*planpb.Input{{Node: 3}}, OutputSchema: schema(i64("k"), i64("total"), i64("n"), i64("lo"), i64("hi"), arrow.Field{Name: "avg", Type: arrow.PrimitiveTypes.Float64, Nullable: true}),
			// Over an endless source the aggregation emits updates, a
			// changelog: the file sink writes it with its row kinds.
			Kind: &planpb.Node_Sink{Sink: &planpb.Sink{Kind: &planpb.Sink_File{File: &planpb.FileSink{Format: planpb.FileSource_CSV, Path: out, Changelog: rows == 0}}}}},
	}
	g, err := plan.PlanWire(&planpb.JobPlan{Name: "keyed", DefaultParallelism: int32(p), Config: config, Nodes: nodes}, plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// keyedResults reads the published rows: k → "total n lo hi avg".
func keyedResults(t *testing.T, dir string) map[int64]string {
	t.Helper()
	got := map[int64]string{}
	for _, r := range publishedRows(t, dir) {
		k, _ := strconv.ParseInt(r[0], 10, 64)
		if _, dup := got[k]; dup {
			t.Fatalf("key %d emitted twice", k)
		}
		got[k] = fmt.Sprint(r[1:])
	}
	return got
}

// wantKeyedResults computes what keyedSums gives for ids 0..rows-1.
func wantKeyedResults(t *testing.T, rows int64, got map[int64]string) {
	t.Helper()
	if len(got) != aggKeys {
		t.Fatalf("%d keys, want %d: %v", len(got), aggKeys, got)
	}
	for k := range int64(aggKeys) {
		var total, n int64
		lo, hi := int64(-1), int64(-1)
		for id := k; id < rows; id += aggKeys {
			total += id
			n++
			if lo < 0 {
				lo = id
			}
			hi = id
		}
		avg := strconv.FormatFloat(float64(total)/float64(n), 'g', -1, 64)
		if want := fmt.Sprint([]string{strconv.FormatInt(total, 10), strconv.FormatInt(n, 10), strconv.FormatInt(lo, 10), strconv.FormatInt(hi, 10), avg}); got[k] != want {
			t.Errorf("key %d: got %s, want %s", k, got[k], want)
		}
	}
}

// A keyed aggregation stopped with a savepoint at parallelism 2 and
// restored at 1 and at 4 gives the results of an uninterrupted run.
func TestKeyedAggregationRestoresAtAnotherParallelism(t *testing.T) {
	const rows = 30000
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	for _, q := range []int{1, 4} {
		t.Run(fmt.Sprintf("2 to %d", q), func(t *testing.T) {
			dir, out, savepoints := t.TempDir(), t.TempDir(), t.TempDir()
			cfg := checkpointConfig(dir, config.ConfigSavepointDir, savepoints)
			// A cache of 4 groups: checkpoints drop groups from memory, and
			// later rows read them back from the backend.
			j, err := Start(context.Background(), keyedSums(t, rows, 10000, 2, out, cfg), Options{Allocator: mem, SourceBatchRows: 500, KeyedCacheGroups: 4})
			if err != nil {
				t.Fatal(err)
			}
			waitForCheckpoints(t, j, 2)
			sp, err := j.StopWithSavepoint(context.Background(), "")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := j.Wait(); err != nil {
				t.Fatal(err)
			}
			if got := keyedResults(t, out); len(got) != 0 {
				t.Fatalf("a bounded aggregation emits at the end of its input, not before: %v", got)
			}
			cfg[config.ConfigRestorePath] = sp
			j2, err := Start(context.Background(), keyedSums(t, rows, 0, q, out, cfg), Options{Allocator: mem})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := j2.Wait(); err != nil {
				t.Fatal(err)
			}
			wantKeyedResults(t, rows, keyedResults(t, out))
		})
	}
	t.Run("uninterrupted", func(t *testing.T) {
		out := t.TempDir()
		if _, err := Run(context.Background(), keyedSums(t, rows, 0, 2, out, nil), Options{Allocator: mem}); err != nil {
			t.Fatal(err)
		}
		wantKeyedResults(t, rows, keyedResults(t, out))
	})
}

// Retained checkpoints keep every shared file they reference, and the
// storage keeps no other after the job (canceled, retained) ends.
func TestRetainedCheckpointsOwnExactlyTheSharedFiles(t *testing.T) {
	dir, out := t.TempDir(), t.TempDir()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	cfg := checkpointConfig(dir, config.ConfigCheckpointRetention, config.RetainOnCancellation)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	j, err := Start(ctx, keyedSums(t, 1_000_000, 20000, 2, out, cfg), Options{Allocator: mem, SourceBatchRows: 500, KeyedCacheGroups: 4})
	if err != nil {
		t.Fatal(err)
	}
	waitForCheckpoints(t, j, 6)
	cancel()
	_, _ = j.Wait()

	root := filepath.Join(dir, j.ID())
	metas, _ := filepath.Glob(filepath.Join(root, "chk-*", "_metadata"))
	if len(metas) != 2 {
		t.Fatalf("retained %v, want 2", metas)
	}
	referenced := map[string]bool{}
	for _, path := range metas {
		m, _, err := LoadMetadata(path)
		if err != nil {
			t.Fatal(err)
		}
		hs, err := checkpoint.KeyedHandles(m)
		if err != nil || len(hs) != 2 {
			t.Fatalf("keyed handles %v: %v", hs, err)
		}
		for _, h := range hs {
			for _, f := range h.SharedFiles() {
				if _, err := os.Stat(filepath.Join(root, f)); err != nil {
					t.Errorf("checkpoint %d references a missing file: %v", m.CheckpointID, err)
				}
				referenced[filepath.Base(f)] = true
			}
		}
	}
	shared, _ := os.ReadDir(filepath.Join(root, "shared"))
	for _, f := range shared {
		if !referenced[f.Name()] {
			t.Errorf("shared/%s is referenced by no retained checkpoint", f.Name())
		}
	}
	if len(shared) == 0 {
		t.Error("no shared files: the keyed state was not checkpointed")
	}
}

// Over an unbounded source a keyed aggregation emits, every update
// interval, the current row of each key that changed: each row is the
// aggregate of a prefix of the key's rows.
func TestKeyedAggregationEmitsUpdatesOfAnUnboundedInput(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	g := keyedSums(t, 0, 20000, 1, t.TempDir(), map[string]string{config.ConfigUpdateInterval: "100 ms"})
	// Collect instead of files, and the aggregation at parallelism 2 (the
	// source at 1 generates ids in increasing order).
	g = replan(t, g, func(j *plan.JobPlan) {
		j.Nodes[2].Parallelism = 2
		j.Nodes[3].Sink = &plan.Sink{Config: &planpb.Sink{Kind: &planpb.Sink_Collect{Collect: &planpb.CollectSink{}}}}
		j.Nodes[3].Parallelism = 2
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type row struct{ k, total, n, lo, hi int64 }
	rows := make(chan row, 1<<16)
	_, err := Run(ctx, g, Options{Allocator: mem, SourceBatchRows: 500, Collect: func(_ *plan.Operator, _ int, b arrow.RecordBatch) error {
		defer b.Release()
		for i := range int(b.NumRows()) {
			v := func(c int) int64 { return b.Column(c).(*array.Int64).Value(i) }
			rows <- row{v(0), v(1), v(2), v(3), v(4)}
		}
		if len(rows) > 5*aggKeys {
			cancel()
		}
		return nil
	}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("want the job canceled, got %v", err)
	}
	close(rows)
	updates := map[int64]int{}
	for r := range rows {
		n := r.n
		if r.lo != r.k || r.hi != r.k+aggKeys*(n-1) || r.total != n*r.k+aggKeys*n*(n-1)/2 {
			t.Fatalf("row %+v is not the aggregate of the first %d ids of key %d", r, n, r.k)
		}
		updates[r.k]++
	}
	if len(updates) != aggKeys {
		t.Fatalf("updates for %d keys, want %d", len(updates), aggKeys)
	}
	for k, n := range updates {
		if n < 2 {
			t.Errorf("key %d was emitted %d times; want an update per interval", k, n)
		}
	}
}
