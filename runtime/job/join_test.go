package job

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/internal/arrowipc"
	"github.com/flinkgo/flinkgo/runtime/config"
	"github.com/flinkgo/flinkgo/runtime/operators"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
	"github.com/flinkgo/flinkgo/runtime/rowkind"
)

// Keys of the regular-join tests' streams: the left key is id % 37, the
// right id % 29, and NULL for 3 ids in 10 on each side.
const eqLeftMod, eqRightMod = 37, 29

func eqKey(id, mod int64, nullFrom int64) (int64, bool) {
	if r := id % 10; r >= nullFrom && r < nullFrom+3 {
		return 0, false
	}
	return id % mod, true
}

// equiJoinStreams plans two datagen streams of ids 0..rows-1 with their
// keys (left: NULL when id % 10 is 0..2, right: 5..7) → join (how) on the
// key → a collect sink; sources at parallelism 1, the join at p.
func equiJoinStreams(t *testing.T, rows int64, p int, how planpb.Join_How, cfg map[string]string) *plan.Graph {
	t.Helper()
	nodes, joined := equiJoinNodes(t, rows, 0, how)
	nodes = append(nodes, &planpb.Node{Id: 6, Uid: "out", Name: "collect", OutputSchema: joined, Inputs: []*planpb.Input{{Node: 5}},
		Kind: &planpb.Node_Sink{Sink: &planpb.Sink{Kind: &planpb.Sink_Collect{Collect: &planpb.CollectSink{}}}}})
	g, err := plan.PlanWire(&planpb.JobPlan{Name: "join", DefaultParallelism: int32(p), Config: cfg, Nodes: nodes}, plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// equiJoinNodes are equiJoinStreams' sources (rowsPerSecond each, 0: as
// fast as they go) and join (node 5), and the join's output schema.
func equiJoinNodes(t *testing.T, rows int64, rowsPerSecond float64, how planpb.Join_How) ([]*planpb.Node, []byte) {
	t.Helper()
	fields := []arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}
	encode := func(s *arrow.Schema) []byte {
		b, err := arrowipc.EncodeSchema(s)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	schema := encode(arrow.NewSchema(fields, nil))
	idSchema := encode(arrow.NewSchema(fields[:1], nil))
	outFields := append(fields, arrow.Field{Name: "id_right", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		arrow.Field{Name: "k_right", Type: arrow.PrimitiveTypes.Int64, Nullable: true})
	out := arrow.NewSchema(outFields, nil)
	if how != planpb.Join_INNER {
		out = rowkind.WithColumn(out)
	}
	joined := encode(out)
	intLit := func(v int64) *planpb.Expr {
		return &planpb.Expr{Kind: &planpb.Expr_Literal{Literal: &planpb.Literal{Value: &planpb.Literal_IntValue{IntValue: v}}}}
	}
	nullLit := &planpb.Expr{Kind: &planpb.Expr_Literal{Literal: &planpb.Literal{Value: &planpb.Literal_Null{Null: true}, Type: "int64"}}}
	call := func(fn string, args ...*planpb.Expr) *planpb.Expr {
		return &planpb.Expr{Kind: &planpb.Expr_Call{Call: &planpb.Call{Function: fn, Args: args}}}
	}
	stream := func(id int32, uid string, mod, nullFrom int64) []*planpb.Node {
		digit := call("modulo", columnExpr("id"), intLit(10))
		isNull := call("and", call("greater_equal", digit, intLit(nullFrom)), call("less", digit, intLit(nullFrom+3)))
		key := call("case_when", isNull, nullLit, call("modulo", columnExpr("id"), intLit(mod)))
		return []*planpb.Node{
			{Id: id, Uid: uid, Name: "datagen", OutputSchema: idSchema, Parallelism: 1,
				Kind: &planpb.Node_Source{Source: &planpb.Source{Kind: &planpb.Source_Datagen{Datagen: &planpb.DatagenSource{Rows: rows, RowsPerSecond: rowsPerSecond}}}}},
			{Id: id + 1, Uid: uid + "-keyed", Name: "with_column(k)", OutputSchema: schema, Parallelism: 1, Inputs: []*planpb.Input{{Node: id}},
				Kind: &planpb.Node_Select{Select: &planpb.Select{Columns: []*planpb.NamedExpr{
					{Name: "id", Expr: columnExpr("id")}, {Name: "k", Expr: key},
				}}}},
		}
	}
	nodes := append(stream(1, "orders", eqLeftMod, 0), stream(3, "customers", eqRightMod, 5)...)
	nodes = append(nodes,
		&planpb.Node{Id: 5, Uid: "join", Name: "join", OutputSchema: joined, Inputs: []*planpb.Input{{Node: 2}, {Node: 4}},
			Kind: &planpb.Node_Join{Join: &planpb.Join{LeftKeys: []string{"k"}, RightKeys: []string{"k"}, How: how}}},
	)
	return nodes, joined
}

// appliedChangelog applies the collected changelog of a join: the
// multiset of "left id|right id" rows ("-" for padding).
type appliedChangelog struct {
	mu   sync.Mutex
	rows map[string]int
	err  error
}

func (a *appliedChangelog) collect(_ *plan.Operator, _ int, b arrow.RecordBatch) error {
	defer b.Release()
	a.mu.Lock()
	defer a.mu.Unlock()
	kinds := rowkind.KindsOf(b)
	l, r := b.Column(0).(*array.Int64), b.Column(2).(*array.Int64)
	cell := func(c *array.Int64, i int) string {
		if c.IsNull(i) {
			return "-"
		}
		return fmt.Sprint(c.Value(i))
	}
	for i := range int(b.NumRows()) {
		key := cell(l, i) + "|" + cell(r, i)
		if rowkind.At(kinds, i).IsAccumulate() {
			a.rows[key]++
			continue
		}
		if a.rows[key] == 0 && a.err == nil {
			a.err = fmt.Errorf("retraction of %s, which is not in the result", key)
		}
		a.rows[key]--
		if a.rows[key] == 0 {
			delete(a.rows, key)
		}
	}
	return nil
}

// wantEquiJoin is SQL's join of the two streams' ids 0..rows-1.
func wantEquiJoin(rows int64, how planpb.Join_How) map[string]int {
	want := map[string]int{}
	rightMatched := make([]bool, rows)
	for l := range rows {
		lk, lok := eqKey(l, eqLeftMod, 0)
		matched := false
		for r := range rows {
			if rk, rok := eqKey(r, eqRightMod, 5); lok && rok && lk == rk {
				want[fmt.Sprintf("%d|%d", l, r)]++
				matched, rightMatched[r] = true, true
			}
		}
		if !matched && (how == planpb.Join_LEFT || how == planpb.Join_FULL) {
			want[fmt.Sprintf("%d|-", l)]++
		}
	}
	for r := range rows {
		if !rightMatched[r] && (how == planpb.Join_RIGHT || how == planpb.Join_FULL) {
			want[fmt.Sprintf("-|%d", r)]++
		}
	}
	return want
}

func checkEquiJoin(t *testing.T, got *appliedChangelog, rows int64, how planpb.Join_How) {
	t.Helper()
	if got.err != nil {
		t.Fatal(got.err)
	}
	want := wantEquiJoin(rows, how)
	if !maps.Equal(got.rows, want) {
		missing, extra := 0, 0
		for k, n := range want {
			missing += max(0, n-got.rows[k])
		}
		for k, n := range got.rows {
			extra += max(0, n-want[k])
		}
		t.Fatalf("the applied changelog has %d distinct rows, want %d: %d missing, %d extra", len(got.rows), len(want), missing, extra)
	}
}

func TestEquiJoinEqualsSQLAtEveryParallelism(t *testing.T) {
	const rows = 600
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	for _, how := range []planpb.Join_How{planpb.Join_INNER, planpb.Join_LEFT, planpb.Join_FULL} {
		for _, p := range []int{1, 3} {
			t.Run(fmt.Sprintf("%s/p%d", how, p), func(t *testing.T) {
				got := &appliedChangelog{rows: map[string]int{}}
				_, err := Run(context.Background(), equiJoinStreams(t, rows, p, how, nil), Options{Allocator: mem, SourceBatchRows: 50, Collect: got.collect})
				if err != nil {
					t.Fatal(err)
				}
				checkEquiJoin(t, got, rows, how)
			})
		}
	}
}

// The join's state is in Pebble: a job stopped with a savepoint at
// parallelism 2 after half of each stream (the applied changelog then is
// the join of the two halves), restored at 1 and at 3, ends
// with the applied changelog of the uninterrupted run (SQL's result),
// including the left rows padded before the savepoint whose matches came
// after it.
func TestEquiJoinRestoresAtAnotherParallelism(t *testing.T) {
	const rows = 2000
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	for _, how := range []planpb.Join_How{planpb.Join_INNER, planpb.Join_LEFT} {
		for _, q := range []int{1, 2, 3} {
			t.Run(fmt.Sprintf("%s/2 to %d", how, q), func(t *testing.T) {
				dir, savepoints := t.TempDir(), t.TempDir()
				cfg := checkpointConfig(dir, config.ConfigSavepointDir, savepoints)
				got := &appliedChangelog{rows: map[string]int{}}
				reg, held := heldSources(t, operators.Options{SourceBatchRows: 100, Collect: got.collect}, rows/2)
				j, err := Start(context.Background(), equiJoinStreams(t, rows, 2, how, cfg), Options{Allocator: mem, Registry: reg})
				if err != nil {
					t.Fatal(err)
				}
				waitHeld(t, j, held, 2) // both streams' sources
				// A checkpoint that began once both held comes after every
				// row of the halves read: the changelog so far, applied, is
				// the batch result of those halves. One checkpoint at a
				// time: the next to complete may have begun before the
				// hold (under load it often has), the one after it began
				// after it.
				waitForCheckpoints(t, j, completedCheckpoints(j)+2)
				waitForCheckpoints(t, j, 2)
				got.mu.Lock()
				checkEquiJoin(t, got, rows/2, how)
				got.mu.Unlock()
				sp, err := j.StopWithSavepoint(context.Background(), "")
				if err != nil {
					t.Fatal(err)
				}
				if _, err := j.Wait(); err != nil {
					t.Fatal(err)
				}
				cfg[config.ConfigRestorePath] = sp
				if _, err := Run(context.Background(), equiJoinStreams(t, rows, q, how, cfg), Options{Allocator: mem, SourceBatchRows: 100, Collect: got.collect}); err != nil {
					t.Fatal(err)
				}
				checkEquiJoin(t, got, rows, how)
			})
		}
	}
}

// matchesPerOrder plans equiJoinNodes' left join (orders ⋈ customers, the
// sources at rowsPerSecond) → key_by(id).agg(count(id_right) AS matches)
// emitting updates → CSV files with changelog in out, at parallelism p:
// an aggregation over the join's retract stream. An order padded before
// its key's first customer arrived counts 0; when that customer comes the
// join retracts the padded row (-D) and adds the joined one (+I), and the
// count goes to 1 (-U/+U: both rows reach the aggregation in one batch).
func matchesPerOrder(t *testing.T, rows int64, rowsPerSecond float64, p int, out string, cfg map[string]string) *plan.Graph {
	t.Helper()
	nodes, _ := equiJoinNodes(t, rows, rowsPerSecond, planpb.Join_LEFT)
	counts, err := arrowipc.EncodeSchema(arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "matches", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil))
	if err != nil {
		t.Fatal(err)
	}
	nodes = append(nodes,
		&planpb.Node{Id: 6, Uid: "matches", Name: "matches", OutputSchema: counts,
			Inputs: []*planpb.Input{{Node: 5, Partitioning: &planpb.Partitioning{Kind: planpb.Partitioning_HASH, Keys: []string{"id"}}}},
			Kind: &planpb.Node_KeyedAggregate{KeyedAggregate: &planpb.KeyedAggregate{Keys: []string{"id"}, Emit: planpb.KeyedAggregate_EMIT_UPDATES,
				Aggregates: []*planpb.Aggregate{{Function: "count", Column: "id_right", Name: "matches"}}}}},
		&planpb.Node{Id: 7, Uid: "out", Name: "write_csv", OutputSchema: counts, Inputs: []*planpb.Input{{Node: 6}},
			Kind: &planpb.Node_Sink{Sink: &planpb.Sink{Kind: &planpb.Sink_File{File: &planpb.FileSink{Format: planpb.FileSource_CSV, Path: out, Changelog: true}}}}},
	)
	g, err := plan.PlanWire(&planpb.JobPlan{Name: "matches", DefaultParallelism: int32(p), Config: cfg, Nodes: nodes}, plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// wantMatches is matchesPerOrder's result: each order id → how many
// customers share its key (0 for a NULL key or none), as "id matches".
func wantMatches(rows int64) []string {
	var want []string
	for l := range rows {
		lk, lok := eqKey(l, eqLeftMod, 0)
		n := 0
		for r := range rows {
			if rk, rok := eqKey(r, eqRightMod, 5); lok && rok && lk == rk {
				n++
			}
		}
		want = append(want, fmt.Sprintf("%d %d", l, n))
	}
	slices.Sort(want)
	return want
}

// Counts over a left join whose matches arrive late, killed mid-stream
// (cancelled, no savepoint) and restored from its latest retained
// checkpoint at another parallelism: the changelog both runs published
// (exactly-once file parts), applied, is the batch result. The restored
// join holds the orders padded before the kill and retracts their padding
// when their customers come after it.
func TestCountsOverALeftJoinSurviveAKillAndARestoreAtAnotherParallelism(t *testing.T) {
	const rows = 3000
	header := []string{"id", "matches", "row_kind"}
	final := func(table map[string]string) []string { return slices.Sorted(maps.Values(table)) }
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	for _, q := range []int{1, 3} {
		t.Run(fmt.Sprintf("2 to %d", q), func(t *testing.T) {
			dir, out := t.TempDir(), t.TempDir()
			cfg := checkpointConfig(dir, config.ConfigCheckpointRetention, config.RetainOnCancellation, config.ConfigUpdateInterval, "30 ms")
			ctx, kill := context.WithCancel(context.Background())
			defer kill()
			// 1500 rows/s per source: the kill comes while rows still flow.
			j, err := Start(ctx, matchesPerOrder(t, rows, 1500, 2, out, cfg), Options{Allocator: mem, SourceBatchRows: 50})
			if err != nil {
				t.Fatal(err)
			}
			waitForCheckpoints(t, j, 2)
			kill()
			if _, err := j.Wait(); err == nil {
				t.Fatal("the job ended before its kill: it must still be reading")
			}
			var latest int64
			for _, c := range j.Checkpoints() {
				if c.Status == "completed" && !c.Savepoint {
					latest = max(latest, c.ID)
				}
			}
			table, kinds, seen := map[string]string{}, map[string]int{}, map[string]bool{}
			upserts(t, out, header, seen, table, kinds)
			if slices.Equal(final(table), wantMatches(rows)) {
				t.Fatal("the first run published the whole result: the kill came too late to test anything")
			}
			cfg[config.ConfigRestorePath] = filepath.Join(dir, j.ID(), fmt.Sprintf("chk-%d", latest))
			if _, err := Run(context.Background(), matchesPerOrder(t, rows, 0, q, out, cfg), Options{Allocator: mem, SourceBatchRows: 50}); err != nil {
				t.Fatal(err)
			}
			upserts(t, out, header, seen, table, kinds)
			got, want := final(table), wantMatches(rows)
			if !slices.Equal(got, want) {
				diff := 0
				for i := range min(len(got), len(want)) {
					if got[i] != want[i] {
						diff++
					}
				}
				t.Fatalf("applied changelog: %d orders, want %d; %d differ", len(got), len(want), diff)
			}
			if kinds["+U"] == 0 {
				t.Errorf("row kinds %v: want counts updated (+U) as customers came", kinds)
			}
		})
	}
}
