package operators

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// rowCodec stores single rows of some columns of a schema as bytes and
// appends them back to builders: the regular join keeps its rows in Pebble
// this way, one entry per row. The encoding is deterministic (equal rows,
// equal bytes), so it also serves as a multiset's key. Per column: a null
// flag byte, then fixed-width values little-endian, booleans as one byte,
// strings and binaries as a uvarint length and their bytes.
type rowCodec struct {
	cols  []int
	types []arrow.DataType
}

// errRowTruncated is a stored row shorter than its columns need.
var errRowTruncated = errors.New("stored row is truncated")

// newRowCodec checks that every column of cols has a type it can store;
// what names the input in errors ("the left input").
func newRowCodec(s *arrow.Schema, cols []int, what string) (*rowCodec, error) {
	c := &rowCodec{cols: cols}
	for _, i := range cols {
		f := s.Field(i)
		if !rowCodecSupports(f.Type) {
			return nil, fmt.Errorf("column %q of %s is %s, which join state cannot store; cast it to a string, number, boolean or timestamp first", f.Name, what, f.Type)
		}
		c.types = append(c.types, f.Type)
	}
	return c, nil
}

func rowCodecSupports(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64,
		arrow.FLOAT32, arrow.FLOAT64, arrow.BOOL, arrow.STRING, arrow.LARGE_STRING, arrow.BINARY, arrow.LARGE_BINARY,
		arrow.TIMESTAMP, arrow.DATE32, arrow.DATE64, arrow.TIME32, arrow.TIME64, arrow.DURATION:
		return true
	}
	return false
}

// encode appends row `row` of b's columns to dst.
func (c *rowCodec) encode(dst []byte, b arrow.RecordBatch, row int) []byte {
	for _, i := range c.cols {
		col := b.Column(i)
		if col.IsNull(row) {
			dst = append(dst, 0)
			continue
		}
		dst = append(dst, 1)
		switch a := col.(type) {
		case *array.Int8:
			dst = append(dst, byte(a.Value(row)))
		case *array.Uint8:
			dst = append(dst, a.Value(row))
		case *array.Int16:
			dst = binary.LittleEndian.AppendUint16(dst, uint16(a.Value(row)))
		case *array.Uint16:
			dst = binary.LittleEndian.AppendUint16(dst, a.Value(row))
		case *array.Int32:
			dst = binary.LittleEndian.AppendUint32(dst, uint32(a.Value(row)))
		case *array.Uint32:
			dst = binary.LittleEndian.AppendUint32(dst, a.Value(row))
		case *array.Date32:
			dst = binary.LittleEndian.AppendUint32(dst, uint32(a.Value(row)))
		case *array.Time32:
			dst = binary.LittleEndian.AppendUint32(dst, uint32(a.Value(row)))
		case *array.Int64:
			dst = binary.LittleEndian.AppendUint64(dst, uint64(a.Value(row)))
		case *array.Uint64:
			dst = binary.LittleEndian.AppendUint64(dst, a.Value(row))
		case *array.Timestamp:
			dst = binary.LittleEndian.AppendUint64(dst, uint64(a.Value(row)))
		case *array.Date64:
			dst = binary.LittleEndian.AppendUint64(dst, uint64(a.Value(row)))
		case *array.Time64:
			dst = binary.LittleEndian.AppendUint64(dst, uint64(a.Value(row)))
		case *array.Duration:
			dst = binary.LittleEndian.AppendUint64(dst, uint64(a.Value(row)))
		case *array.Float32:
			dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(a.Value(row)))
		case *array.Float64:
			dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(a.Value(row)))
		case *array.Boolean:
			if a.Value(row) {
				dst = append(dst, 1)
			} else {
				dst = append(dst, 0)
			}
		case *array.String:
			v := a.Value(row)
			dst = append(binary.AppendUvarint(dst, uint64(len(v))), v...)
		case *array.LargeString:
			v := a.Value(row)
			dst = append(binary.AppendUvarint(dst, uint64(len(v))), v...)
		case *array.Binary:
			v := a.Value(row)
			dst = append(binary.AppendUvarint(dst, uint64(len(v))), v...)
		case *array.LargeBinary:
			v := a.Value(row)
			dst = append(binary.AppendUvarint(dst, uint64(len(v))), v...)
		default: // newRowCodec refused the type
			panic(fmt.Sprintf("rowCodec: unsupported column type %s", col.DataType()))
		}
	}
	return dst
}

// decode appends the row src holds to builders (one per column, in the
// codec's order).
func (c *rowCodec) decode(src []byte, builders []array.Builder) error {
	for i := range c.cols {
		if len(src) == 0 {
			return errRowTruncated
		}
		valid := src[0] == 1
		src = src[1:]
		bld := builders[i]
		if !valid {
			bld.AppendNull()
			continue
		}
		need := 0
		switch bld.(type) {
		case *array.Int8Builder, *array.Uint8Builder, *array.BooleanBuilder:
			need = 1
		case *array.Int16Builder, *array.Uint16Builder:
			need = 2
		case *array.Int32Builder, *array.Uint32Builder, *array.Date32Builder, *array.Time32Builder, *array.Float32Builder:
			need = 4
		case *array.Int64Builder, *array.Uint64Builder, *array.TimestampBuilder, *array.Date64Builder,
			*array.Time64Builder, *array.DurationBuilder, *array.Float64Builder:
			need = 8
		}
		if len(src) < need {
			return errRowTruncated
		}
		switch b := bld.(type) {
		case *array.Int8Builder:
			b.Append(int8(src[0]))
		case *array.Uint8Builder:
			b.Append(src[0])
		case *array.BooleanBuilder:
			b.Append(src[0] == 1)
		case *array.Int16Builder:
			b.Append(int16(binary.LittleEndian.Uint16(src)))
		case *array.Uint16Builder:
			b.Append(binary.LittleEndian.Uint16(src))
		case *array.Int32Builder:
			b.Append(int32(binary.LittleEndian.Uint32(src)))
		case *array.Uint32Builder:
			b.Append(binary.LittleEndian.Uint32(src))
		case *array.Date32Builder:
			b.Append(arrow.Date32(binary.LittleEndian.Uint32(src)))
		case *array.Time32Builder:
			b.Append(arrow.Time32(binary.LittleEndian.Uint32(src)))
		case *array.Float32Builder:
			b.Append(math.Float32frombits(binary.LittleEndian.Uint32(src)))
		case *array.Int64Builder:
			b.Append(int64(binary.LittleEndian.Uint64(src)))
		case *array.Uint64Builder:
			b.Append(binary.LittleEndian.Uint64(src))
		case *array.TimestampBuilder:
			b.Append(arrow.Timestamp(binary.LittleEndian.Uint64(src)))
		case *array.Date64Builder:
			b.Append(arrow.Date64(binary.LittleEndian.Uint64(src)))
		case *array.Time64Builder:
			b.Append(arrow.Time64(binary.LittleEndian.Uint64(src)))
		case *array.DurationBuilder:
			b.Append(arrow.Duration(binary.LittleEndian.Uint64(src)))
		case *array.Float64Builder:
			b.Append(math.Float64frombits(binary.LittleEndian.Uint64(src)))
		case *array.StringBuilder, *array.LargeStringBuilder, *array.BinaryBuilder:
			n, read := binary.Uvarint(src)
			if read <= 0 || uint64(len(src)-read) < n {
				return errRowTruncated
			}
			v := src[read : read+int(n)]
			switch b := bld.(type) {
			case *array.StringBuilder:
				b.BinaryBuilder.Append(v)
			case *array.LargeStringBuilder:
				b.BinaryBuilder.Append(v)
			case *array.BinaryBuilder:
				b.Append(v)
			}
			need = read + int(n)
		default:
			return fmt.Errorf("rowCodec: cannot decode into %T", bld)
		}
		src = src[need:]
	}
	if len(src) != 0 {
		return fmt.Errorf("stored row has %d bytes past its columns", len(src))
	}
	return nil
}

// anyNull reports whether any of cols is null at row.
func anyNull(b arrow.RecordBatch, cols []int, row int) bool {
	for _, k := range cols {
		if b.Column(k).IsNull(row) {
			return true
		}
	}
	return false
}
