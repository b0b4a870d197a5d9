package operators

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/runtime/operator"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/runtime/rowkind"
)

// unionKind forwards every input (the planner checked that their schemas
// agree).
var unionKind = operator.Kind{
	Kind: plan.KindUnion,
	Schema: func(_ *plan.Operator, in []*arrow.Schema) (*arrow.Schema, error) {
		// One changelog input makes the union a changelog: the rows of
		// append-only inputs are inserts.
		for _, s := range in {
			if rowkind.Has(s) {
				return rowkind.WithColumn(in[0]), nil
			}
		}
		return in[0], nil
	},
	New: func(c *operator.Context) (operator.Operator, error) {
		return &unionProc{schema: c.Out, mem: c.Allocator}, nil
	},
}

// unionProc forwards every input, giving batches the union's schema (the
// inputs' schemas are equal up to field metadata).
type unionProc struct {
	operator.Base
	schema *arrow.Schema
	mem    memory.Allocator
}

func (u *unionProc) Process(ctx context.Context, _ int, b arrow.RecordBatch, emit operator.Emit) error {
	if rowkind.Has(u.schema) && !rowkind.Has(b.Schema()) {
		withKinds, err := rowkind.AttachConstant(u.mem, b, rowkind.Insert)
		if err != nil {
			return err
		}
		defer withKinds.Release()
		b = withKinds
	}
	return emit(ctx, array.NewRecordBatch(u.schema, b.Columns(), b.NumRows()))
}
