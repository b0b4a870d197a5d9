package arrowipc

import (
	"bytes"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// EncodedSize sizes EncodeBatch's buffer: it must be at least what is
// written, or the buffer grows (and copies) after all.
func TestEncodedSizeCoversTheEncodedStream(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	dict := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "i", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "a_rather_long_column_name_of_strings", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Float64)},
		{Name: "d", Type: dict},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for _, rows := range []int{0, 1, 7, 1000} {
		for r := range rows {
			b.Field(0).(*array.Int64Builder).AppendValues([]int64{int64(r)}, []bool{r%3 != 0})
			b.Field(1).(*array.StringBuilder).Append(string(rune('a' + r%26)))
			lb := b.Field(2).(*array.ListBuilder)
			lb.Append(true)
			lb.ValueBuilder().(*array.Float64Builder).AppendValues([]float64{1, 2}, nil)
			if err := b.Field(3).(*array.BinaryDictionaryBuilder).AppendString([]string{"x", "y"}[r%2]); err != nil {
				t.Fatal(err)
			}
		}
		rec := b.NewRecordBatch()
		for _, batch := range []arrow.RecordBatch{rec, rec.NewSlice(int64(rows/3), int64(rows/2))} {
			var buf bytes.Buffer
			if err := EncodeBatch(&buf, batch, mem); err != nil {
				t.Fatal(err)
			}
			if size := EncodedSize(batch); size < buf.Len() {
				t.Errorf("%d rows: EncodedSize %d, encoded %d bytes", batch.NumRows(), size, buf.Len())
			}
			if BatchBytes(batch) <= 0 && batch.NumRows() > 0 {
				t.Errorf("%d rows: BatchBytes %d", batch.NumRows(), BatchBytes(batch))
			}
			if batch != rec {
				batch.Release()
			}
		}
		rec.Release()
	}
}
