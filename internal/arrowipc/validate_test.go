package arrowipc

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// craftedStrings is an IPC stream of one string column whose offsets go
// backwards ([0, 6, 3] over "abcdef"): pyarrow and arrow-go's writer
// produce it without complaint, and reading row 1 slices [6:3].
func craftedStrings(t testing.TB) []byte {
	t.Helper()
	offsets := memory.NewBufferBytes(arrow.Int32Traits.CastToBytes([]int32{0, 6, 3}))
	values := memory.NewBufferBytes([]byte("abcdef"))
	data := array.NewData(arrow.BinaryTypes.String, 2, []*memory.Buffer{nil, offsets, values}, nil, 0, 0)
	defer data.Release()
	col := array.MakeFromData(data)
	defer col.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	b := array.NewRecordBatch(schema, []arrow.Array{col}, 2)
	defer b.Release()
	var buf bytes.Buffer
	if err := EncodeBatch(&buf, b, memory.NewGoAllocator()); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestCraftedOffsetsAreAnErrorNotAPanic(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	data := craftedStrings(t)
	b, err := DecodeBatch(data, mem)
	if err == nil {
		defer b.Release()
		t.Fatalf("a string column with offsets going backwards decoded: %v", b)
	}
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `column "s"`) {
		t.Errorf("error %q does not name the invalid column", err)
	}
	if _, _, err := DecodeStream(data, mem); !errors.Is(err, ErrInvalid) {
		t.Errorf("DecodeStream: %v", err)
	}
}

// Every truncation and many byte flips of a valid stream give a batch
// that validates, or an error: never a panic.
func TestCorruptedStreamsNeverPanic(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	valid := validStream(t)
	for n := range len(valid) {
		if b, err := DecodeBatch(valid[:n], mem); err == nil {
			b.Release()
		}
	}
	for i := range valid {
		for _, v := range []byte{0x00, 0xff, 0x7f, 0x80} {
			c := bytes.Clone(valid)
			c[i] = v
			decodeAndRead(t, c, mem)
		}
	}
}

// decodeAndRead decodes data and, when it validates, reads every value.
func decodeAndRead(t testing.TB, data []byte, mem memory.Allocator) {
	_, batches, err := DecodeStream(data, mem)
	if err != nil {
		if !errors.Is(err, ErrInvalid) {
			t.Fatalf("error %v is not ErrInvalid", err)
		}
		return
	}
	for _, b := range batches {
		for _, col := range b.Columns() {
			for i := range col.Len() {
				_ = col.ValueStr(i)
			}
		}
		b.Release()
	}
}

// validStream is a batch of strings, int64s with nulls and a list.
func validStream(t testing.TB) []byte {
	t.Helper()
	mem := memory.NewGoAllocator()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "n", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32), Nullable: true},
	}, nil)
	rb := array.NewRecordBuilder(mem, schema)
	defer rb.Release()
	rb.Field(0).(*array.StringBuilder).AppendValues([]string{"ab", "", "cde"}, []bool{true, false, true})
	rb.Field(1).(*array.Int64Builder).AppendValues([]int64{1, 0, 3}, []bool{true, false, true})
	lb := rb.Field(2).(*array.ListBuilder)
	for i := range 3 {
		lb.Append(true)
		for j := range i {
			lb.ValueBuilder().(*array.Int32Builder).Append(int32(j))
		}
	}
	b := rb.NewRecordBatch()
	defer b.Release()
	var buf bytes.Buffer
	if err := EncodeBatch(&buf, b, mem); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func FuzzDecodeStream(f *testing.F) {
	f.Add(validStream(f))
	f.Add(craftedStrings(f))
	f.Add([]byte{})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		decodeAndRead(t, data, mem)
		if b, err := DecodeBatch(data, mem); err == nil {
			b.Release()
		}
		_, _ = DecodeSchema(data)
	})
}

// A table is read in place: decoding it allocates nothing from the
// allocator for its buffers (it used to copy every message body, once per
// subtask of an inline-table source).
func TestDecodeStreamReadsInPlace(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	data := validStream(t)
	_, batches, err := DecodeStream(data, mem)
	if err != nil {
		t.Fatal(err)
	}
	if n := mem.CurrentAlloc(); n != 0 {
		t.Errorf("decoding a %d-byte stream allocated %d bytes; want its buffers read in place", len(data), n)
	}
	if len(batches) != 1 || batches[0].Column(0).ValueStr(2) != "cde" {
		t.Errorf("decoded %v", batches)
	}
	for _, b := range batches {
		b.Release()
	}
}
