package plan

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
	"github.com/flinkgo/flinkgo/udf/bridge/proto/workerpb"
)

// Every node kind and field of the wire form reaches the model.
func TestDecodeKeepsEveryField(t *testing.T) {
	udaf := &workerpb.UdfSpec{Name: "med", FuncType: workerpb.FuncType_FUNC_TYPE_PANDAS_AGGREGATE}
	fnSpec := &workerpb.UdfSpec{Name: "f"}
	datagen := &planpb.Source{Kind: &planpb.Source_Datagen{Datagen: &planpb.DatagenSource{Rows: 10}}}
	collect := &planpb.Sink{Kind: &planpb.Sink_Collect{Collect: &planpb.CollectSink{}}}
	wire := &planpb.JobPlan{Name: "all", DefaultParallelism: 3, Config: map[string]string{"k": "v"}, Nodes: []*planpb.Node{
		{Id: 1, Uid: "src", Name: "source", Parallelism: 2, OutputSchema: []byte{1, 2}, Kind: &planpb.Node_Source{Source: datagen}},
		{Id: 2, Inputs: []*planpb.Input{{Node: 1, Partitioning: &planpb.Partitioning{Kind: planpb.Partitioning_HASH, Keys: []string{"k"}}}},
			Kind: &planpb.Node_Select{Select: &planpb.Select{Columns: []*planpb.NamedExpr{
				{Name: "y", Expr: call(fnSpec, fn("cast", col("x")), &planpb.Expr{Kind: &planpb.Expr_Literal{Literal: &planpb.Literal{
					Value: &planpb.Literal_IntValue{IntValue: 5}, Type: "duration[ms]"}}})},
			}}}},
		{Id: 3, Inputs: []*planpb.Input{from(2)}, Kind: &planpb.Node_Filter{Filter: &planpb.Filter{Predicate: fn("less", col("y"), lit(1))}}},
		{Id: 4, Inputs: []*planpb.Input{from(3)}, Kind: &planpb.Node_MapBatches{MapBatches: &planpb.MapBatches{Function: fnSpec, HandlesRowKinds: true}}},
		{Id: 5, Inputs: []*planpb.Input{from(4)}, Kind: &planpb.Node_KeyedAggregate{KeyedAggregate: &planpb.KeyedAggregate{
			Keys: []string{"k"}, Emit: planpb.KeyedAggregate_EMIT_UPDATES, StateTtlMs: 7,
			Aggregates: []*planpb.Aggregate{{Function: "sum", Column: "y", Name: "s"}, {Function: "udaf", Name: "m", Udf: udaf, Args: []string{"y"}}}}}},
		{Id: 6, Inputs: []*planpb.Input{from(5)}, Kind: &planpb.Node_DropDuplicates{DropDuplicates: &planpb.DropDuplicates{Subset: []string{"k"}}}},
		{Id: 7, Inputs: []*planpb.Input{from(6)}, Kind: &planpb.Node_Limit{Limit: &planpb.Limit{N: 9}}},
		{Id: 8, Inputs: []*planpb.Input{from(1)}, Kind: &planpb.Node_WatermarkAssigner{WatermarkAssigner: &planpb.WatermarkAssigner{
			TimeColumn: "ts", MaxOutOfOrdernessMs: 4, IdleTimeoutMs: 6,
			TimeExtractor: &planpb.Select{Columns: []*planpb.NamedExpr{as("ts", col("t"))}}}}},
		{Id: 9, Inputs: []*planpb.Input{from(8)}, Kind: &planpb.Node_WindowAggregate{WindowAggregate: &planpb.WindowAggregate{
			TimeColumn: "ts", Kind: planpb.WindowAggregate_HOP, SizeMs: 20, SlideMs: 10, StepMs: 1, GapMs: 2, OffsetMs: 3,
			Keys: []string{"k"}, Aggregates: []*planpb.Aggregate{{Function: "count", Name: "n"}},
			AllowedLatenessMs: 11, LateRows: planpb.WindowAggregate_KEEP}}},
		{Id: 10, Inputs: []*planpb.Input{from(8), {Node: 9, Output: planpb.Input_LATE_ROWS}}, Kind: &planpb.Node_IntervalJoin{IntervalJoin: &planpb.IntervalJoin{
			LeftKeys: []string{"a"}, RightKeys: []string{"b"}, LeftTime: "lt", RightTime: "rt", LowerNs: -5, UpperNs: 5,
			How: planpb.IntervalJoin_FULL, LateRows: planpb.WindowAggregate_KEEP}}},
		{Id: 11, Inputs: []*planpb.Input{from(1), from(8)}, Kind: &planpb.Node_Join{Join: &planpb.Join{
			LeftKeys: []string{"a"}, RightKeys: []string{"b"}, How: planpb.Join_LEFT, Suffix: "_r", NullsEqual: true, StateTtlMs: 8,
			LeftUniqueKey: []string{"a"}, RightUniqueKey: []string{"b"}}}},
		{Id: 12, Inputs: []*planpb.Input{from(7), from(10), from(11)}, Kind: &planpb.Node_Union{Union: &planpb.Union{}}},
		{Id: 13, Inputs: []*planpb.Input{from(12)}, Kind: &planpb.Node_Sink{Sink: collect}},
	}}
	job := decodeJob(wire)

	want := &JobPlan{Name: "all", DefaultParallelism: 3, Config: map[string]string{"k": "v"}, Nodes: []*Node{
		{ID: 1, UID: "src", Name: "source", Parallelism: 2, OutputSchema: []byte{1, 2}, Inputs: []*Input{}, Kind: KindSource, Source: &Source{Config: datagen}},
		{ID: 2, Inputs: []*Input{{Node: 1, Partitioning: PartitionHash, Keys: []string{"k"}}}, Kind: KindSelect, Select: &Select{Columns: []*NamedExpr{
			{Name: "y", Expr: &UDFCall{UDF: fnSpec, Args: []Expr{
				&Call{Function: "cast", Args: []Expr{&Column{Name: "x"}}},
				&Literal{Kind: LiteralInt, Int: 5, Type: "duration[ms]"},
			}}},
		}}},
		{ID: 3, Inputs: []*Input{{Node: 2}}, Kind: KindFilter, Filter: &Filter{Predicate: &Call{Function: "less", Args: []Expr{
			&Column{Name: "y"}, &Literal{Kind: LiteralInt, Int: 1},
		}}}},
		{ID: 4, Inputs: []*Input{{Node: 3}}, Kind: KindMapBatches, MapBatches: &MapBatches{Function: fnSpec, HandlesRowKinds: true}},
		{ID: 5, Inputs: []*Input{{Node: 4}}, Kind: KindKeyedAggregate, KeyedAggregate: &KeyedAggregate{
			Keys: []string{"k"}, Emit: EmitUpdates, StateTTLMs: 7,
			Aggregates: []*Aggregate{{Function: "sum", Column: "y", Name: "s"}, {Function: "udaf", Name: "m", UDF: udaf, Args: []string{"y"}}}}},
		{ID: 6, Inputs: []*Input{{Node: 5}}, Kind: KindDropDuplicates, DropDuplicates: &DropDuplicates{Subset: []string{"k"}}},
		{ID: 7, Inputs: []*Input{{Node: 6}}, Kind: KindLimit, Limit: &Limit{N: 9}},
		{ID: 8, Inputs: []*Input{{Node: 1}}, Kind: KindWatermarkAssigner, WatermarkAssigner: &WatermarkAssigner{
			TimeColumn: "ts", MaxOutOfOrdernessMs: 4, IdleTimeoutMs: 6,
			TimeExtractor: &Select{Columns: []*NamedExpr{{Name: "ts", Expr: &Column{Name: "t"}}}}}},
		{ID: 9, Inputs: []*Input{{Node: 8}}, Kind: KindWindowAggregate, WindowAggregate: &WindowAggregate{
			TimeColumn: "ts", Kind: Hop, SizeMs: 20, SlideMs: 10, StepMs: 1, GapMs: 2, OffsetMs: 3,
			Keys: []string{"k"}, Aggregates: []*Aggregate{{Function: "count", Name: "n"}},
			AllowedLatenessMs: 11, LateRows: KeepLateRows}},
		{ID: 10, Inputs: []*Input{{Node: 8}, {Node: 9, Output: LateRowsOutput}}, Kind: KindIntervalJoin, IntervalJoin: &IntervalJoin{
			LeftKeys: []string{"a"}, RightKeys: []string{"b"}, LeftTime: "lt", RightTime: "rt", LowerNs: -5, UpperNs: 5,
			How: FullJoin, LateRows: KeepLateRows}},
		{ID: 11, Inputs: []*Input{{Node: 1}, {Node: 8}}, Kind: KindJoin, Join: &Join{
			LeftKeys: []string{"a"}, RightKeys: []string{"b"}, How: LeftJoin, Suffix: "_r", NullsEqual: true, StateTTLMs: 8,
			LeftUniqueKey: []string{"a"}, RightUniqueKey: []string{"b"}}},
		{ID: 12, Inputs: []*Input{{Node: 7}, {Node: 10}, {Node: 11}}, Kind: KindUnion},
		{ID: 13, Inputs: []*Input{{Node: 12}}, Kind: KindSink, Sink: &Sink{Config: collect}},
	}}
	if len(job.Nodes) != len(want.Nodes) {
		t.Fatalf("%d nodes, want %d", len(job.Nodes), len(want.Nodes))
	}
	for i := range want.Nodes {
		if !reflect.DeepEqual(job.Nodes[i], want.Nodes[i]) {
			t.Errorf("node %d:\n got %+v\nwant %+v", want.Nodes[i].ID, job.Nodes[i], want.Nodes[i])
		}
	}
	job.Nodes, want.Nodes = nil, nil
	if !reflect.DeepEqual(job, want) {
		t.Errorf("plan:\n got %+v\nwant %+v", job, want)
	}
	if _, err := Decode(wire); err != nil {
		t.Errorf("the plan is valid: %v", err)
	}
}

// What the wire form can say but the model cannot hold is refused at the
// boundary, in one error naming each user's step, before anything plans.
func TestDecodeErrorsNameTheStep(t *testing.T) {
	empty := &planpb.Expr{}
	noSpec := &planpb.Expr{Kind: &planpb.Expr_Udf{Udf: &planpb.UdfExpr{Args: []*planpb.Expr{col("x")}}}}
	wire := job(
		source(1, "src", uid("s")),
		nil,
		selectNode(3, "blank", from(1), []*planpb.NamedExpr{as("y", empty)}, uid("b")),
		selectNode(4, "nospec", from(1), []*planpb.NamedExpr{as("y", noSpec)}),
		&planpb.Node{Id: 5, Name: "lost", Inputs: []*planpb.Input{nil}, Kind: &planpb.Node_Union{Union: &planpb.Union{}}},
		&planpb.Node{Id: 6, Name: "weird join", Inputs: []*planpb.Input{from(1), from(1)},
			Kind: &planpb.Node_Join{Join: &planpb.Join{LeftKeys: []string{"k"}, RightKeys: []string{"k"}, How: 9}}},
		&planpb.Node{Id: 7, Name: "no window", Inputs: []*planpb.Input{from(1)},
			Kind: &planpb.Node_WindowAggregate{WindowAggregate: &planpb.WindowAggregate{TimeColumn: "t", Aggregates: []*planpb.Aggregate{{Function: "count", Name: "n"}}}}},
		sink(8, "out", &planpb.Input{Node: 1, Output: 7}),
	)
	_, err := Decode(wire)
	if !errors.Is(err, ErrInvalidPlan) {
		t.Fatalf("got %v, want ErrInvalidPlan", err)
	}
	for _, want := range []string{
		"node #1 of the plan is empty",
		`node 3 "blank" (uid "b"): select column "y": an expression is empty`,
		`node 4 "nospec" (no uid): select column "y": a UDF call has no UDF spec`,
		`node 5 "lost" (no uid): input #0 is empty`,
		`node 6 "weird join" (no uid): join has unknown join type 9`,
		`node 7 "no window" (no uid): window: unknown window kind 0`,
		`node 8 "out" (no uid): input from node 1 reads its output 7, which is unknown`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error lacks %q:\n%v", want, err)
		}
	}
	if _, err := Decode(nil); err == nil || !strings.Contains(err.Error(), "the job plan is nil") {
		t.Errorf("nil plan: %v", err)
	}
}

// A plan built in Go (as the embedded runtime's callers do) is validated
// by Plan as a decoded one is: a kind without its spec, or a kind no node
// has, is an error, not a panic.
func TestPlanRefusesAModelWithoutItsSpec(t *testing.T) {
	src := &Node{ID: 1, Name: "src", Kind: KindSource, Source: &Source{Config: &planpb.Source{Kind: &planpb.Source_Datagen{Datagen: &planpb.DatagenSource{Rows: 1}}}}}
	for _, tc := range []struct {
		node *Node
		want string
	}{
		{&Node{ID: 2, Name: "sel", Kind: KindSelect, Inputs: []*Input{{Node: 1}}}, `node 2 "sel" (no uid): the select node has no select spec`},
		{&Node{ID: 2, Name: "agg", Kind: KindKeyedAggregate, Inputs: []*Input{{Node: 1}}}, `node 2 "agg" (no uid): the keyed_aggregate node has no keyed_aggregate spec`},
		{&Node{ID: 2, Name: "u", Kind: KindUDF, Inputs: []*Input{{Node: 1}}}, `node 2 "u" (no uid): has kind udf, which is not a node's kind`},
		{&Node{ID: 2, Name: "x", Kind: 99, Inputs: []*Input{{Node: 1}}}, `node 2 "x" (no uid): has kind Kind(99), which is not a node's kind`},
	} {
		_, err := Plan(&JobPlan{Name: "go", Nodes: []*Node{src, tc.node}}, Options{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want %q", err, tc.want)
		}
	}
}
