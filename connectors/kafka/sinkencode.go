package kafka

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
)

// kafkaEncoder turns a batch into one record per row, column by column:
// each column appends its cell of every row to that row's value, so the
// type switch runs once per column, not per cell. The value is a JSON
// object of every column (keys in column order), a CSV line (columns in
// order, no header, as read_kafka's csv reads it) or the bytes of the one
// column (raw). The key column, if any, is also encoded into the key.
type kafkaEncoder struct {
	format planpb.KafkaSource_Format
	schema *arrow.Schema
	names  [][]byte // JSON-quoted column names, with their colon
	key    int      // key column index, -1 for none
}

func newKafkaEncoder(k *planpb.KafkaSink, schema *arrow.Schema) (*kafkaEncoder, error) {
	e := &kafkaEncoder{format: k.GetValueFormat(), schema: schema, key: -1}
	if e.format == planpb.KafkaSource_FORMAT_UNSPECIFIED {
		e.format = planpb.KafkaSource_JSON
	}
	if name := k.GetKeyColumn(); name != "" {
		idx := schema.FieldIndices(name)
		if len(idx) != 1 {
			return nil, fmt.Errorf("key column %q is not a column of %s", name, schema)
		}
		e.key = idx[0]
	}
	switch e.format {
	case planpb.KafkaSource_JSON:
		for _, f := range schema.Fields() {
			n, err := json.Marshal(f.Name)
			if err != nil {
				return nil, err
			}
			e.names = append(e.names, append(n, ':'))
		}
	case planpb.KafkaSource_RAW:
		if schema.NumFields() != 1 && !(schema.NumFields() == 2 && e.key >= 0) {
			return nil, fmt.Errorf("value_format raw writes one column (besides the key), and the rows have %d: %s", schema.NumFields(), schema)
		}
		if !isBytesLike(schema.Field(e.rawColumn()).Type) {
			return nil, fmt.Errorf("value_format raw writes a string or binary column, and %q is %s", schema.Field(e.rawColumn()).Name, schema.Field(e.rawColumn()).Type)
		}
	case planpb.KafkaSource_CSV:
	default:
		return nil, fmt.Errorf("value_format %s is not json, csv or raw", e.format)
	}
	return e, nil
}

// rawColumn is the column a raw value is made of: the one that is not the
// key.
func (e *kafkaEncoder) rawColumn() int {
	if e.schema.NumFields() == 2 && e.key == 0 {
		return 1
	}
	return 0
}

func isBytesLike(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.STRING, arrow.LARGE_STRING, arrow.BINARY, arrow.LARGE_BINARY, arrow.STRING_VIEW, arrow.BINARY_VIEW:
		return true
	case arrow.DICTIONARY:
		return isBytesLike(t.(*arrow.DictionaryType).ValueType)
	}
	return false
}

// bytesAt returns a string or binary cell's bytes (nil for null).
func bytesAt(c arrow.Array, r int) []byte {
	if c.IsNull(r) {
		return nil
	}
	switch a := c.(type) {
	case interface{ Value(int) string }:
		return []byte(a.Value(r))
	case interface{ Value(int) []byte }:
		return bytes.Clone(a.Value(r))
	case *array.Dictionary:
		return bytesAt(a.Dictionary(), a.GetValueIndex(r))
	}
	return nil
}

// encode returns a record per row of b (Topic left to the producer).
func (e *kafkaEncoder) encode(b arrow.RecordBatch) ([]*kgo.Record, error) {
	n := int(b.NumRows())
	recs := make([]*kgo.Record, n)
	for r := range recs {
		recs[r] = &kgo.Record{}
	}
	if e.key >= 0 {
		col := b.Column(e.key)
		for r, rec := range recs {
			if col.IsNull(r) {
				continue
			}
			if isBytesLike(col.DataType()) {
				rec.Key = bytesAt(col, r)
				continue
			}
			v, err := json.Marshal(col.GetOneForMarshal(r))
			if err != nil {
				return nil, fmt.Errorf("key column %q row %d: %w", e.schema.Field(e.key).Name, r, err)
			}
			rec.Key = v
		}
	}
	switch e.format {
	case planpb.KafkaSource_RAW:
		col := b.Column(e.rawColumn())
		for r, rec := range recs {
			rec.Value = bytesAt(col, r)
		}
	case planpb.KafkaSource_CSV:
		var buf bytes.Buffer
		cw := csv.NewWriter(&buf)
		row := make([]string, b.NumCols())
		for r, rec := range recs {
			for c := range row {
				col := b.Column(c)
				if col.IsNull(r) {
					row[c] = ""
				} else {
					row[c] = col.ValueStr(r)
				}
			}
			buf.Reset()
			if err := cw.Write(row); err != nil {
				return nil, err
			}
			cw.Flush()
			rec.Value = bytes.TrimSuffix(bytes.Clone(buf.Bytes()), []byte("\n"))
		}
	default:
		vals := make([][]byte, n)
		for r := range vals {
			vals[r] = append(make([]byte, 0, 16*int(b.NumCols())), '{')
		}
		for c, col := range b.Columns() {
			for r := range vals {
				if c > 0 {
					vals[r] = append(vals[r], ',')
				}
				vals[r] = append(vals[r], e.names[c]...)
				if fast, ok := appendJSONFast(vals[r], col, r); ok {
					vals[r] = fast
					continue
				}
				v, err := json.Marshal(col.GetOneForMarshal(r))
				if err != nil {
					return nil, fmt.Errorf("column %q row %d: %w", e.schema.Field(c).Name, r, err)
				}
				vals[r] = append(vals[r], v...)
			}
		}
		for r, rec := range recs {
			rec.Value = append(vals[r], '}')
		}
	}
	return recs, nil
}

// appendJSONFast appends the JSON of the commonest cells without
// reflection: null, integers, booleans and strings.
func appendJSONFast(dst []byte, col arrow.Array, r int) ([]byte, bool) {
	if col.IsNull(r) {
		return append(dst, "null"...), true
	}
	switch a := col.(type) {
	case *array.Int64:
		return strconv.AppendInt(dst, a.Value(r), 10), true
	case *array.Int32:
		return strconv.AppendInt(dst, int64(a.Value(r)), 10), true
	case *array.Boolean:
		return strconv.AppendBool(dst, a.Value(r)), true
	case *array.String:
		v, err := json.Marshal(a.Value(r))
		return append(dst, v...), err == nil
	}
	return dst, false
}
