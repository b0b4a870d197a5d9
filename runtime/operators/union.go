package operators

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flinkgo/flinkgo/runtime/operator"
	"github.com/flinkgo/flinkgo/runtime/plan"
)

// unionKind forwards every input (the planner checked that their schemas
// agree).
var unionKind = operator.Kind{
	Kind:   plan.KindUnion,
	Schema: sameAsInput,
	New: func(c *operator.Context) (operator.Operator, error) {
		return &unionProc{schema: c.Out}, nil
	},
}

// unionProc forwards every input, giving batches the union's schema (the
// inputs' schemas are equal up to field metadata).
type unionProc struct {
	operator.Base
	schema *arrow.Schema
}

func (u *unionProc) Process(ctx context.Context, _ int, b arrow.RecordBatch, emit operator.Emit) error {
	return emit(ctx, array.NewRecordBatch(u.schema, b.Columns(), b.NumRows()))
}
