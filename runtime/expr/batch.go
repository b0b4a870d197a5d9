package expr

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
)

// Projection computes named output columns from a batch (select,
// with_columns).
type Projection struct {
	schema *arrow.Schema
	exprs  []*Expr
}

// NewProjection compiles one expression per output column.
func NewProjection(names []string, exprs []*Expr) (*Projection, error) {
	if len(names) != len(exprs) {
		return nil, fmt.Errorf("expr: %d names for %d expressions", len(names), len(exprs))
	}
	fields := make([]arrow.Field, len(exprs))
	for i, e := range exprs {
		fields[i] = arrow.Field{Name: names[i], Type: e.Type(), Nullable: true}
	}
	return &Projection{schema: arrow.NewSchema(fields, nil), exprs: exprs}, nil
}

// Schema is the schema of the batches Apply returns.
func (p *Projection) Schema() *arrow.Schema { return p.schema }

// Apply returns a new batch of the projected columns; the caller releases it.
func (p *Projection) Apply(ctx context.Context, batch arrow.RecordBatch) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, 0, len(p.exprs))
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	for _, e := range p.exprs {
		c, err := e.Eval(ctx, batch)
		if err != nil {
			return nil, err
		}
		cols = append(cols, c)
	}
	return array.NewRecordBatch(p.schema, cols, batch.NumRows()), nil
}

// Filter keeps the rows of a batch whose predicate is true; false and null
// drop the row, as SQL's WHERE.
type Filter struct {
	predicate *Expr
}

// NewFilter checks that predicate is boolean.
func NewFilter(predicate *Expr) (*Filter, error) {
	if predicate.Type().ID() != arrow.BOOL {
		return nil, fmt.Errorf("expr: filter predicate %s is %s, not bool", predicate, predicate.Type())
	}
	return &Filter{predicate: predicate}, nil
}

// Apply returns the kept rows as a new batch; the caller releases it.
func (f *Filter) Apply(ctx context.Context, batch arrow.RecordBatch) (arrow.RecordBatch, error) {
	mask, err := f.predicate.Eval(ctx, batch)
	if err != nil {
		return nil, err
	}
	defer mask.Release()
	out, err := compute.FilterRecordBatch(ctx, batch, mask, &compute.FilterOptions{NullSelection: compute.SelectionDropNulls})
	if err != nil {
		return nil, fmt.Errorf("expr: filter %s: %w", f.predicate, err)
	}
	return out, nil
}
