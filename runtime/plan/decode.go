package plan

import (
	"fmt"

	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
)

// This file is the decoding boundary: the one place the wire form of a
// plan (planpb, what the client sends) becomes the runtime's model. The
// server's Execute and Explain and the embedded runtime's entry call
// Decode (or PlanWire) once; everything below works on the model.

// Decode turns the wire form of a job plan into the model and validates
// it. The error wraps ErrInvalidPlan and lists every problem found, each
// naming the user's step (node id, name and uid), as Plan's do.
func Decode(wire *planpb.JobPlan) (*JobPlan, error) {
	if wire == nil {
		return nil, fmt.Errorf("%w: the job plan is nil", ErrInvalidPlan)
	}
	job := decodeJob(wire)
	if problems := validate(job); len(problems) > 0 {
		return nil, invalid(job, problems)
	}
	return job, nil
}

// PlanWire decodes a wire plan (Decode) and plans it (Plan): for callers
// that plan a client's plan once.
func PlanWire(wire *planpb.JobPlan, opts Options) (*Graph, error) {
	job, err := Decode(wire)
	if err != nil {
		return nil, err
	}
	return Plan(job, opts)
}

// decodeJob translates without judging: what the model cannot hold
// (empty nodes, inputs and expressions, a node without kind) stays nil or
// zero for the validation to report.
func decodeJob(wire *planpb.JobPlan) *JobPlan {
	job := &JobPlan{
		Name:               wire.Name,
		DefaultParallelism: int(wire.GetDefaultParallelism()),
		Config:             wire.GetConfig(),
		Nodes:              make([]*Node, len(wire.GetNodes())),
	}
	for i, n := range wire.GetNodes() {
		if n != nil {
			job.Nodes[i] = decodeNode(n)
		}
	}
	return job
}

func decodeNode(w *planpb.Node) *Node {
	n := &Node{
		ID:           int(w.GetId()),
		UID:          w.GetUid(),
		Name:         w.GetName(),
		Parallelism:  int(w.GetParallelism()),
		OutputSchema: w.GetOutputSchema(),
		Inputs:       make([]*Input, len(w.GetInputs())),
	}
	for i, in := range w.GetInputs() {
		if in != nil {
			n.Inputs[i] = &Input{
				Node:         int(in.GetNode()),
				Partitioning: Partitioning(in.GetPartitioning().GetKind()),
				Keys:         in.GetPartitioning().GetKeys(),
				Output:       int(in.GetOutput()),
			}
		}
	}
	switch k := w.GetKind().(type) {
	case *planpb.Node_Source:
		n.Kind, n.Source = KindSource, &Source{Config: k.Source}
	case *planpb.Node_Sink:
		n.Kind, n.Sink = KindSink, &Sink{Config: k.Sink}
	case *planpb.Node_Select:
		n.Kind, n.Select = KindSelect, decodeSelect(k.Select)
	case *planpb.Node_Filter:
		n.Kind, n.Filter = KindFilter, &Filter{Predicate: decodeExpr(k.Filter.GetPredicate())}
	case *planpb.Node_MapBatches:
		n.Kind, n.MapBatches = KindMapBatches, &MapBatches{
			Function:        k.MapBatches.GetFunction(),
			HandlesRowKinds: k.MapBatches.GetHandlesRowKinds(),
		}
	case *planpb.Node_KeyedAggregate:
		a := k.KeyedAggregate
		n.Kind, n.KeyedAggregate = KindKeyedAggregate, &KeyedAggregate{
			Keys:       a.GetKeys(),
			Aggregates: decodeAggregates(a.GetAggregates()),
			Emit:       Emit(a.GetEmit()),
			StateTTLMs: a.GetStateTtlMs(),
		}
	case *planpb.Node_Union:
		n.Kind = KindUnion
	case *planpb.Node_DropDuplicates:
		n.Kind, n.DropDuplicates = KindDropDuplicates, &DropDuplicates{Subset: k.DropDuplicates.GetSubset()}
	case *planpb.Node_Limit:
		n.Kind, n.Limit = KindLimit, &Limit{N: k.Limit.GetN()}
	case *planpb.Node_WatermarkAssigner:
		wa := k.WatermarkAssigner
		n.Kind, n.WatermarkAssigner = KindWatermarkAssigner, &WatermarkAssigner{
			TimeColumn:          wa.GetTimeColumn(),
			MaxOutOfOrdernessMs: wa.GetMaxOutOfOrdernessMs(),
			IdleTimeoutMs:       wa.GetIdleTimeoutMs(),
		}
		if ext := wa.GetTimeExtractor(); ext != nil {
			n.WatermarkAssigner.TimeExtractor = decodeSelect(ext)
		}
	case *planpb.Node_WindowAggregate:
		wa := k.WindowAggregate
		n.Kind, n.WindowAggregate = KindWindowAggregate, &WindowAggregate{
			TimeColumn:        wa.GetTimeColumn(),
			Kind:              WindowKind(wa.GetKind()),
			SizeMs:            wa.GetSizeMs(),
			SlideMs:           wa.GetSlideMs(),
			StepMs:            wa.GetStepMs(),
			GapMs:             wa.GetGapMs(),
			OffsetMs:          wa.GetOffsetMs(),
			Keys:              wa.GetKeys(),
			Aggregates:        decodeAggregates(wa.GetAggregates()),
			AllowedLatenessMs: wa.GetAllowedLatenessMs(),
			LateRows:          LateRows(wa.GetLateRows()),
		}
	case *planpb.Node_IntervalJoin:
		j := k.IntervalJoin
		n.Kind, n.IntervalJoin = KindIntervalJoin, &IntervalJoin{
			LeftKeys:  j.GetLeftKeys(),
			RightKeys: j.GetRightKeys(),
			LeftTime:  j.GetLeftTime(),
			RightTime: j.GetRightTime(),
			LowerNs:   j.GetLowerNs(),
			UpperNs:   j.GetUpperNs(),
			How:       JoinType(j.GetHow()),
			LateRows:  LateRows(j.GetLateRows()),
		}
	case *planpb.Node_Join:
		j := k.Join
		n.Kind, n.Join = KindJoin, &Join{
			LeftKeys:       j.GetLeftKeys(),
			RightKeys:      j.GetRightKeys(),
			How:            JoinType(j.GetHow()),
			Suffix:         j.GetSuffix(),
			NullsEqual:     j.GetNullsEqual(),
			StateTTLMs:     j.GetStateTtlMs(),
			LeftUniqueKey:  j.GetLeftUniqueKey(),
			RightUniqueKey: j.GetRightUniqueKey(),
		}
	}
	return n
}

func decodeSelect(s *planpb.Select) *Select {
	out := &Select{Columns: make([]*NamedExpr, len(s.GetColumns()))}
	for i, c := range s.GetColumns() {
		out.Columns[i] = &NamedExpr{Name: c.GetName(), Expr: decodeExpr(c.GetExpr())}
	}
	return out
}

func decodeAggregates(aggs []*planpb.Aggregate) []*Aggregate {
	out := make([]*Aggregate, len(aggs))
	for i, a := range aggs {
		out[i] = &Aggregate{Function: a.GetFunction(), Column: a.GetColumn(), Name: a.GetName(), UDF: a.GetUdf(), Args: a.GetArgs()}
	}
	return out
}

// DecodeExpr turns the wire form of an expression into the model's; an
// empty expression is nil.
func DecodeExpr(e *planpb.Expr) Expr { return decodeExpr(e) }

func decodeExpr(e *planpb.Expr) Expr {
	switch k := e.GetKind().(type) {
	case *planpb.Expr_Column:
		return &Column{Name: k.Column}
	case *planpb.Expr_Literal:
		return decodeLiteral(k.Literal)
	case *planpb.Expr_Call:
		return &Call{Function: k.Call.GetFunction(), Args: decodeExprs(k.Call.GetArgs()), CastTo: k.Call.GetCastTo()}
	case *planpb.Expr_Udf:
		return &UDFCall{UDF: k.Udf.GetUdf(), Args: decodeExprs(k.Udf.GetArgs())}
	}
	return nil
}

func decodeExprs(es []*planpb.Expr) []Expr {
	out := make([]Expr, len(es))
	for i, e := range es {
		out[i] = decodeExpr(e)
	}
	return out
}

func decodeLiteral(l *planpb.Literal) *Literal {
	out := &Literal{Type: l.GetType()}
	switch v := l.GetValue().(type) {
	case *planpb.Literal_Null:
		out.Kind = LiteralNull
	case *planpb.Literal_BoolValue:
		out.Kind, out.Bool = LiteralBool, v.BoolValue
	case *planpb.Literal_IntValue:
		out.Kind, out.Int = LiteralInt, v.IntValue
	case *planpb.Literal_FloatValue:
		out.Kind, out.Float = LiteralFloat, v.FloatValue
	case *planpb.Literal_StringValue:
		out.Kind, out.String = LiteralString, v.StringValue
	}
	return out
}
