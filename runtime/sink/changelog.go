package sink

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/runtime/rowkind"
)

// RowKindColumn is the explicit column a file sink writing changelogs
// (FileSink.changelog) adds after the data columns: each row's kind as
// Flink's short string ("+I", "+U", "-D").
const RowKindColumn = "row_kind"

// changelogSchema is what a changelog file sink writes for input schema
// s: the data columns, then RowKindColumn.
func changelogSchema(s *arrow.Schema) (*arrow.Schema, error) {
	values := rowkind.WithoutColumn(s)
	if len(values.FieldIndices(RowKindColumn)) > 0 {
		return nil, fmt.Errorf("a changelog sink adds the column %q, which the rows have already: rename it", RowKindColumn)
	}
	fields := append(append([]arrow.Field(nil), values.Fields()...), arrow.Field{Name: RowKindColumn, Type: arrow.BinaryTypes.String})
	return arrow.NewSchema(fields, nil), nil
}

// changelogWriter writes each row's kind as RowKindColumn.
type changelogWriter struct {
	Writer
	schema *arrow.Schema
}

func (w *changelogWriter) Write(b arrow.RecordBatch) error {
	values, kinds := rowkind.Strip(b)
	defer values.Release()
	if kinds != nil {
		defer kinds.Release()
	}
	sb := array.NewStringBuilder(memory.DefaultAllocator)
	defer sb.Release()
	for r := range int(b.NumRows()) {
		sb.Append(rowkind.At(kinds, r).String())
	}
	col := sb.NewArray()
	defer col.Release()
	cols := append(append([]arrow.Array(nil), values.Columns()...), col)
	out := array.NewRecordBatch(w.schema, cols, b.NumRows())
	defer out.Release()
	return w.Writer.Write(out)
}
