package arrowipc

import (
	"bytes"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func TestRoundTrip(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	b := array.NewRecordBuilder(mem, schema)
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2, 0}, []bool{true, true, false})
	batch := b.NewRecordBatch()
	b.Release()
	defer batch.Release()

	var buf bytes.Buffer
	if err := EncodeBatch(&buf, batch, mem); err != nil {
		t.Fatal(err)
	}
	back, err := DecodeBatch(buf.Bytes(), mem)
	if err != nil {
		t.Fatal(err)
	}
	defer back.Release()
	if !array.RecordEqual(batch, back) {
		t.Errorf("decoded %v, want %v", back, batch)
	}

	data, err := EncodeSchema(schema)
	if err != nil {
		t.Fatal(err)
	}
	s, err := DecodeSchema(data)
	if err != nil || !s.Equal(schema) {
		t.Errorf("schema %v, %v", s, err)
	}
	if _, err := DecodeBatch(data, mem); err == nil {
		t.Error("a stream without a batch decoded")
	}
}
