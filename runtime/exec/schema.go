package exec

import (
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flinkgo/flinkgo/internal/arrowipc"
	"github.com/flinkgo/flinkgo/runtime/expr"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/udf/bridge/proto/workerpb"
)

// schemas computes every operator's output schema in topological order:
// sources, map_batches and aggregates declare theirs (the client computed
// them), selects and UDF operators derive theirs from their input.
func schemas(g *plan.Graph) ([]*arrow.Schema, error) {
	out := make([]*arrow.Schema, len(g.Operators))
	for _, op := range g.Operators {
		var in *arrow.Schema
		if edges := g.Inputs(op.ID); len(edges) > 0 {
			in = out[edges[0].From]
		}
		s, err := operatorSchema(op, in)
		if err != nil {
			return nil, fmt.Errorf("exec: operator %q (uid %s): %w", op.Name, op.UID, err)
		}
		out[op.ID] = s
	}
	return out, nil
}

func operatorSchema(op *plan.Operator, in *arrow.Schema) (*arrow.Schema, error) {
	switch op.Kind {
	case plan.KindSource, plan.KindKeyedAggregate:
		return decodeSchema(op.OutputSchema)
	case plan.KindMapBatches:
		return decodeSchema(op.Node.GetMapBatches().GetFunction().GetReturnSchema())
	case plan.KindFilter, plan.KindUnion, plan.KindSink:
		return in, nil
	case plan.KindSelect:
		_, s, err := compileSelect(op, in)
		return s, err
	case plan.KindUDF:
		return udfSchemas(op, in)
	}
	return nil, fmt.Errorf("unknown operator kind %s", op.Kind)
}

// compileSelect compiles a select's columns and returns them with its
// output schema (kept input columns first, with KeepInput).
func compileSelect(op *plan.Operator, in *arrow.Schema) ([]*expr.Expr, *arrow.Schema, error) {
	var exprs []*expr.Expr
	var fields []arrow.Field
	if op.KeepInput {
		for _, f := range in.Fields() {
			if !slices.Contains(op.DropColumns, f.Name) {
				e, err := expr.Compile(columnExpr(f.Name), in)
				if err != nil {
					return nil, nil, err
				}
				exprs, fields = append(exprs, e), append(fields, f)
			}
		}
	}
	for _, c := range op.Node.GetSelect().GetColumns() {
		e, err := expr.Compile(c.GetExpr(), in)
		if err != nil {
			return nil, nil, err
		}
		exprs = append(exprs, e)
		fields = append(fields, arrow.Field{Name: c.GetName(), Type: e.Type(), Nullable: true})
	}
	return exprs, arrow.NewSchema(fields, nil), nil
}

// udfSchemas is a UDF operator's output: the columns it passes through and
// the UDF results, typed by the UDFs' declared return types.
func udfSchemas(op *plan.Operator, in *arrow.Schema) (*arrow.Schema, error) {
	results, err := resultFields(op.UDF.Calls)
	if err != nil {
		return nil, err
	}
	var fields []arrow.Field
	if op.KeepInput {
		for _, f := range in.Fields() {
			if !slices.Contains(op.DropColumns, f.Name) {
				fields = append(fields, f)
			}
		}
	}
	for _, name := range op.UDF.OutputColumns {
		if f, ok := results[name]; ok {
			fields = append(fields, f)
			continue
		}
		idx := in.FieldIndices(name)
		if len(idx) == 0 {
			return nil, fmt.Errorf("output column %q is neither an input column nor a UDF result", name)
		}
		fields = append(fields, in.Field(idx[0]))
	}
	return arrow.NewSchema(fields, nil), nil
}

// resultFields maps each call's output column to its declared type.
func resultFields(calls []*workerpb.UdfCall) (map[string]arrow.Field, error) {
	out := make(map[string]arrow.Field, len(calls))
	for _, c := range calls {
		rs, err := decodeSchema(c.GetUdf().GetReturnSchema())
		if err != nil || rs.NumFields() != 1 {
			return nil, fmt.Errorf("udf %q: return_schema is not a one-field Arrow schema", c.GetUdf().GetName())
		}
		out[c.GetOutput()] = arrow.Field{Name: c.GetOutput(), Type: rs.Field(0).Type, Nullable: true}
	}
	return out, nil
}

func decodeSchema(data []byte) (*arrow.Schema, error) {
	if len(data) == 0 {
		return nil, fmt.Errorf("no output schema in the plan")
	}
	s, err := arrowipc.DecodeSchema(data)
	if err != nil {
		return nil, fmt.Errorf("output schema is not an Arrow IPC stream: %w", err)
	}
	return s, nil
}
