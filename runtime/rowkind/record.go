package rowkind

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Column is the name of the hidden row-kind column, the last column of
// every batch of a changelog stream.
const Column = "_row_kind"

// Type is the row-kind column's type: int8, Flink's RowKind byte values.
var Type arrow.DataType = arrow.PrimitiveTypes.Int8

// Field is the row-kind column's field (never null).
var Field = arrow.Field{Name: Column, Type: Type}

// Index returns the index of the row-kind column of s, -1 when s has none.
// Only the last column can be it.
func Index(s *arrow.Schema) int {
	n := s.NumFields()
	if n == 0 {
		return -1
	}
	if f := s.Field(n - 1); f.Name == Column && arrow.TypeEqual(f.Type, Type) {
		return n - 1
	}
	return -1
}

// Has reports whether s carries the row-kind column.
func Has(s *arrow.Schema) bool { return Index(s) >= 0 }

// WithColumn returns s with the row-kind column appended (s itself when it
// has it already).
func WithColumn(s *arrow.Schema) *arrow.Schema {
	if Has(s) {
		return s
	}
	fields := append(append([]arrow.Field(nil), s.Fields()...), Field)
	md := s.Metadata()
	return arrow.NewSchema(fields, &md)
}

// WithoutColumn returns s without its row-kind column (s itself when it has
// none): the schema users' functions see.
func WithoutColumn(s *arrow.Schema) *arrow.Schema {
	i := Index(s)
	if i < 0 {
		return s
	}
	md := s.Metadata()
	return arrow.NewSchema(s.Fields()[:i], &md)
}

// KindsOf returns b's row-kind column, nil when b has none (all inserts). It
// is not retained: it lives as long as b.
func KindsOf(b arrow.RecordBatch) *array.Int8 {
	i := Index(b.Schema())
	if i < 0 {
		return nil
	}
	return b.Column(i).(*array.Int8)
}

// At returns the kind of row `row` of kinds (Insert when kinds is nil, a
// batch without the column).
func At(kinds *array.Int8, row int) Kind {
	if kinds == nil {
		return Insert
	}
	return Kind(kinds.Value(row))
}

// Validate checks that every value of b's row-kind column is a row kind.
func Validate(b arrow.RecordBatch) error {
	kinds := KindsOf(b)
	if kinds == nil {
		return nil
	}
	if kinds.NullN() > 0 {
		return fmt.Errorf("row-kind column %s holds %d nulls", Column, kinds.NullN())
	}
	for row, v := range kinds.Int8Values() {
		if !Kind(v).Valid() {
			return fmt.Errorf("row-kind column %s holds %d at row %d (0 +I, 1 -U, 2 +U, 3 -D)", Column, v, row)
		}
	}
	return nil
}

// Strip splits b into its values (b without the row-kind column) and its
// kinds (nil when b has none). Both are new references the caller
// releases.
func Strip(b arrow.RecordBatch) (values arrow.RecordBatch, kinds *array.Int8) {
	i := Index(b.Schema())
	if i < 0 {
		b.Retain()
		return b, nil
	}
	kinds = b.Column(i).(*array.Int8)
	kinds.Retain()
	return array.NewRecordBatch(WithoutColumn(b.Schema()), b.Columns()[:i], b.NumRows()), kinds
}

// Attach returns values with kinds appended as the row-kind column: a new
// reference the caller releases. kinds must have values' row count; a
// values batch that has the column already is refused.
func Attach(values arrow.RecordBatch, kinds arrow.Array) (arrow.RecordBatch, error) {
	if Has(values.Schema()) {
		return nil, fmt.Errorf("batch has a row-kind column already")
	}
	if !arrow.TypeEqual(kinds.DataType(), Type) {
		return nil, fmt.Errorf("row kinds are %s, want %s", kinds.DataType(), Type)
	}
	if int64(kinds.Len()) != values.NumRows() {
		return nil, fmt.Errorf("%d row kinds for %d rows", kinds.Len(), values.NumRows())
	}
	cols := append(append([]arrow.Array(nil), values.Columns()...), kinds)
	return array.NewRecordBatch(WithColumn(values.Schema()), cols, values.NumRows()), nil
}

// AttachConstant returns values with every row of kind k: a new reference
// the caller releases.
func AttachConstant(mem memory.Allocator, values arrow.RecordBatch, k Kind) (arrow.RecordBatch, error) {
	kinds := NewArray(mem, func(yield func(Kind) bool) {
		for range values.NumRows() {
			if !yield(k) {
				return
			}
		}
	})
	defer kinds.Release()
	return Attach(values, kinds)
}

// NewArray builds a row-kind column from a sequence of kinds.
func NewArray(mem memory.Allocator, kinds func(yield func(Kind) bool)) *array.Int8 {
	b := array.NewInt8Builder(mem)
	defer b.Release()
	for k := range kinds {
		b.Append(int8(k))
	}
	return b.NewInt8Array()
}

// Take returns the kinds of the given rows of kinds (nil kinds: nil, all
// inserts), for operators that select rows (filter) or reorder them.
func Take(mem memory.Allocator, kinds *array.Int8, rows []int) *array.Int8 {
	if kinds == nil {
		return nil
	}
	return NewArray(mem, func(yield func(Kind) bool) {
		for _, r := range rows {
			if !yield(Kind(kinds.Value(r))) {
				return
			}
		}
	})
}
