package job

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/internal/arrowipc"
	"github.com/flinkgo/flinkgo/runtime/config"
	"github.com/flinkgo/flinkgo/runtime/operators"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
)

const joinKeys = 23

// joinedStreams plans two datagen streams (ids 0..rows-1, key id % 23,
// time id*10 ms on the left and id*10+7 ms on the right) → interval
// join on the key with right.t in [left.t - 20 ms, left.t + 30 ms] → CSV
// files in out; sources at parallelism 1, the join and sink at p.
func joinedStreams(t *testing.T, rows int64, rowsPerSecond float64, p int, out string, cfg map[string]string) *plan.Graph {
	t.Helper()
	fields := []arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "t", Type: &arrow.TimestampType{Unit: arrow.Millisecond}, Nullable: true},
	}
	schema, err := arrowipc.EncodeSchema(arrow.NewSchema(fields, nil))
	if err != nil {
		t.Fatal(err)
	}
	joinedFields := slices.Clone(fields)
	for _, f := range fields {
		f.Name += "_right"
		joinedFields = append(joinedFields, f)
	}
	joined, err := arrowipc.EncodeSchema(arrow.NewSchema(joinedFields, nil))
	if err != nil {
		t.Fatal(err)
	}
	idSchema, err := arrowipc.EncodeSchema(arrow.NewSchema(fields[:1], nil))
	if err != nil {
		t.Fatal(err)
	}
	intLit := func(v int64) *planpb.Expr {
		return &planpb.Expr{Kind: &planpb.Expr_Literal{Literal: &planpb.Literal{Value: &planpb.Literal_IntValue{IntValue: v}}}}
	}
	call := func(fn string, args ...*planpb.Expr) *planpb.Expr {
		return &planpb.Expr{Kind: &planpb.Expr_Call{Call: &planpb.Call{Function: fn, Args: args}}}
	}
	stream := func(id int32, uid string, shift int64) []*planpb.Node {
		ts := &planpb.Expr{Kind: &planpb.Expr_Call{Call: &planpb.Call{Function: "cast", CastTo: "timestamp[ms]",
			Args: []*planpb.Expr{call("add", call("multiply", columnExpr("id"), intLit(10)), intLit(shift))}}}}
		return []*planpb.Node{
			{Id: id, Uid: uid, Name: "datagen", OutputSchema: idSchema, Parallelism: 1,
				Kind: &planpb.Node_Source{Source: &planpb.Source{Kind: &planpb.Source_Datagen{Datagen: &planpb.DatagenSource{Rows: rows, RowsPerSecond: rowsPerSecond}}}}},
			{Id: id + 1, Uid: uid + "-keyed", Name: "with_columns(k, t)", OutputSchema: schema, Parallelism: 1, Inputs: []*planpb.Input{{Node: id}},
				Kind: &planpb.Node_Select{Select: &planpb.Select{Columns: []*planpb.NamedExpr{
					{Name: "id", Expr: columnExpr("id")}, {Name: "k", Expr: call("modulo", columnExpr("id"), intLit(joinKeys))}, {Name: "t", Expr: ts},
				}}}},
		}
	}
	nodes := append(stream(1, "views", 0), stream(3, "clicks", 7)...)
	nodes = append(nodes,
		&planpb.Node{Id: 5, Uid: "join", Name: "interval_join", OutputSchema: joined, Inputs: []*planpb.Input{{Node: 2}, {Node: 4}},
			Kind: &planpb.Node_IntervalJoin{IntervalJoin: &planpb.IntervalJoin{LeftKeys: []string{"k"}, RightKeys: []string{"k"},
				LeftTime: "t", RightTime: "t", LowerNs: -20e6, UpperNs: 30e6, How: planpb.IntervalJoin_INNER}}},
		&planpb.Node{Id: 6, Uid: "out", Name: "out", OutputSchema: joined, Inputs: []*planpb.Input{{Node: 5}},
			Kind: &planpb.Node_Sink{Sink: &planpb.Sink{Kind: &planpb.Sink_File{File: &planpb.FileSink{Format: planpb.FileSource_CSV, Path: out}}}}},
	)
	g, err := plan.PlanWire(&planpb.JobPlan{Name: "join", DefaultParallelism: int32(p), Config: cfg, Nodes: nodes}, plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// wantJoined checks the (left id, right id) pairs against the join's
// definition over ids 0..rows-1.
func wantJoined(t *testing.T, rows int64, got [][2]int64) {
	t.Helper()
	var want [][2]int64
	for l := range rows {
		for r := range rows {
			lt, rt := l*10, r*10+7
			if l%joinKeys == r%joinKeys && lt-20 <= rt && rt <= lt+30 {
				want = append(want, [2]int64{l, r})
			}
		}
	}
	cmp := func(a, b [2]int64) int {
		if a[0] != b[0] {
			return int(a[0] - b[0])
		}
		return int(a[1] - b[1])
	}
	slices.SortFunc(got, cmp)
	slices.SortFunc(want, cmp)
	if !slices.Equal(got, want) {
		t.Fatalf("%d pairs, want %d; first %v, want %v", len(got), len(want), got[:min(10, len(got))], want[:min(10, len(want))])
	}
}

// The join's buffered rows are keyed state: a job stopped with a savepoint
// at parallelism 2, while every row read is still buffered (the sources
// make no watermarks before their end), restored at 1 and at 3, gives
// every pair exactly once. The sources of the first job hold after half
// their rows, so the savepoint finds them running and the restored job
// reads the other half.
func TestIntervalJoinRestoresAtAnotherParallelism(t *testing.T) {
	const rows = 3000
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	for _, q := range []int{1, 3} {
		t.Run(fmt.Sprintf("2 to %d", q), func(t *testing.T) {
			dir, out, savepoints := t.TempDir(), t.TempDir(), t.TempDir()
			cfg := checkpointConfig(dir, config.ConfigSavepointDir, savepoints)
			reg, held := heldSources(t, operators.Options{SourceBatchRows: 100}, rows/2)
			j, err := Start(context.Background(), joinedStreams(t, rows, 0, 2, out, cfg), Options{Allocator: mem, Registry: reg})
			if err != nil {
				t.Fatal(err)
			}
			waitHeld(t, j, held, 2) // both streams' sources
			restoreFromSavepoint(t, j, cfg, mem, func() *plan.Graph { return joinedStreams(t, rows, 0, q, out, cfg) })
			var got [][2]int64
			for _, r := range publishedRows(t, out) {
				l, err1 := strconv.ParseInt(r[0], 10, 64)
				rr, err2 := strconv.ParseInt(r[3], 10, 64)
				if err1 != nil || err2 != nil {
					t.Fatalf("row %v", r)
				}
				got = append(got, [2]int64{l, rr})
			}
			wantJoined(t, rows, got)
		})
	}
}
