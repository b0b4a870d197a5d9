package operators

import (
	"context"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flinkgo/flinkgo/runtime/expr"
	"github.com/flinkgo/flinkgo/runtime/operator"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/runtime/rowkind"
)

// selectKind evaluates a projection: kept input columns first (with
// KeepInput), then the select's expressions.
var selectKind = operator.Kind{
	Kind: plan.KindSelect,
	Schema: func(op *plan.Operator, in []*arrow.Schema) (*arrow.Schema, error) {
		_, s, err := compileSelect(op, in[0])
		return s, err
	},
	New: func(c *operator.Context) (operator.Operator, error) {
		exprs, _, err := compileSelect(c.Op, c.Input())
		if err != nil {
			return nil, err
		}
		return newSelect(exprs, c.Out)
	},
}

// selectProc evaluates a projection.
type selectProc struct {
	operator.Base
	proj *expr.Projection
}

func newSelect(exprs []*expr.Expr, schema *arrow.Schema) (*selectProc, error) {
	names := make([]string, schema.NumFields())
	for i, f := range schema.Fields() {
		names[i] = f.Name
	}
	p, err := expr.NewProjection(names, exprs)
	if err != nil {
		return nil, err
	}
	return &selectProc{proj: p}, nil
}

func (s *selectProc) Process(ctx context.Context, _ int, b arrow.RecordBatch, emit operator.Emit) error {
	out, err := s.proj.Apply(ctx, b)
	if err != nil {
		return err
	}
	return emit(ctx, out)
}

func columnExpr(name string) plan.Expr {
	return &plan.Column{Name: name}
}

// compileSelect compiles a select's columns and returns them with its
// output schema (kept input columns first, with KeepInput).
func compileSelect(op *plan.Operator, in *arrow.Schema) ([]*expr.Expr, *arrow.Schema, error) {
	var exprs []*expr.Expr
	var fields []arrow.Field
	if op.KeepInput {
		for _, f := range in.Fields() {
			if !slices.Contains(op.DropColumns, f.Name) && f.Name != rowkind.Column {
				e, err := expr.Compile(columnExpr(f.Name), in)
				if err != nil {
					return nil, nil, err
				}
				exprs, fields = append(exprs, e), append(fields, f)
			}
		}
	}
	for _, c := range op.Node.Select.Columns {
		e, err := expr.Compile(c.Expr, in)
		if err != nil {
			return nil, nil, err
		}
		exprs = append(exprs, e)
		fields = append(fields, arrow.Field{Name: c.Name, Type: e.Type(), Nullable: true})
	}
	if rowkind.Has(in) {
		// A projection keeps each row's kind: the column stays last.
		e, err := expr.Compile(columnExpr(rowkind.Column), in)
		if err != nil {
			return nil, nil, err
		}
		exprs, fields = append(exprs, e), append(fields, rowkind.Field)
	}
	return exprs, arrow.NewSchema(fields, nil), nil
}
