package operators

import (
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flinkgo/flinkgo/internal/arrowipc"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/runtime/rowkind"
	"github.com/flinkgo/flinkgo/udf/bridge/proto/workerpb"
)

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
			if !slices.Contains(op.DropColumns, f.Name) && f.Name != rowkind.Column {
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
	if rowkind.Has(in) {
		// Results align 1:1 with input rows: each keeps its row's kind.
		fields = append(fields, rowkind.Field)
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
