package operators

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flinkgo/flinkgo/runtime/expr"
	"github.com/flinkgo/flinkgo/runtime/operator"
	"github.com/flinkgo/flinkgo/runtime/plan"
)

// filterKind keeps the rows whose predicate is true.
var filterKind = operator.Kind{
	Kind:   plan.KindFilter,
	Schema: sameAsInput,
	New: func(c *operator.Context) (operator.Operator, error) {
		pred, err := expr.Compile(c.Op.Node.Filter.Predicate, c.Input())
		if err != nil {
			return nil, err
		}
		f, err := expr.NewFilter(pred)
		return &filterProc{f: f}, err
	},
}

// filterProc keeps the rows whose predicate is true.
type filterProc struct {
	operator.Base
	f *expr.Filter
}

func (p *filterProc) Process(ctx context.Context, _ int, b arrow.RecordBatch, emit operator.Emit) error {
	out, err := p.f.Apply(ctx, b)
	if err != nil {
		return err
	}
	if out.NumRows() == 0 {
		out.Release()
		return nil
	}
	return emit(ctx, out)
}

// sameAsInput is the output schema of an operator that passes its first
// input's columns through.
func sameAsInput(_ *plan.Operator, in []*arrow.Schema) (*arrow.Schema, error) { return in[0], nil }
