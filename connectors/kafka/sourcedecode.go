package kafka

import (
	"bytes"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/csv"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
)

// kafkaColumns is where the columns of a Kafka source's output come from:
// the value (decoded by its format) or the record's metadata.
type kafkaColumns struct {
	out    *arrow.Schema
	value  *arrow.Schema // the output's value columns, in output order
	format planpb.KafkaSource_Format
	// fromValue[i] is the value column of output column i, or -1 for a
	// metadata column, whose kind is meta[i].
	fromValue []int
	meta      []kafkaMeta
}

type kafkaMeta int

const (
	metaNone kafkaMeta = iota
	metaKey
	metaTimestamp
	metaPartition
	metaOffset
	metaTopic
)

// metaTypes are the types of the metadata columns.
var metaTypes = map[kafkaMeta]arrow.DataType{
	metaKey:       arrow.BinaryTypes.Binary,
	metaTimestamp: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"},
	metaPartition: arrow.PrimitiveTypes.Int32,
	metaOffset:    arrow.PrimitiveTypes.Int64,
	metaTopic:     arrow.BinaryTypes.String,
}

func newKafkaColumns(src *planpb.KafkaSource, out *arrow.Schema) (*kafkaColumns, error) {
	c := &kafkaColumns{out: out, format: src.GetValueFormat(), fromValue: make([]int, out.NumFields()), meta: make([]kafkaMeta, out.NumFields())}
	if c.format == planpb.KafkaSource_FORMAT_UNSPECIFIED {
		c.format = planpb.KafkaSource_JSON
	}
	names := map[string]kafkaMeta{}
	for name, m := range map[string]kafkaMeta{
		src.GetKeyColumn(): metaKey, src.GetTimestampColumn(): metaTimestamp,
		src.GetPartitionColumn(): metaPartition, src.GetOffsetColumn(): metaOffset, src.GetTopicColumn(): metaTopic,
	} {
		if name != "" {
			names[name] = m
		}
	}
	var valueFields []arrow.Field
	var errs []error
	for i, f := range out.Fields() {
		m, ok := names[f.Name]
		if !ok {
			c.fromValue[i] = len(valueFields)
			valueFields = append(valueFields, f)
			continue
		}
		delete(names, f.Name)
		c.fromValue[i], c.meta[i] = -1, m
		if !arrow.TypeEqual(f.Type, metaTypes[m]) {
			errs = append(errs, fmt.Errorf("column %q is %s; a Kafka record's metadata column of its kind is %s", f.Name, f.Type, metaTypes[m]))
		}
	}
	for name := range names {
		errs = append(errs, fmt.Errorf("the metadata column %q is not in the source's schema", name))
	}
	c.value = arrow.NewSchema(valueFields, nil)
	switch c.format {
	case planpb.KafkaSource_RAW:
		if len(valueFields) != 1 || (valueFields[0].Type.ID() != arrow.BINARY && valueFields[0].Type.ID() != arrow.STRING) {
			errs = append(errs, fmt.Errorf(`value_format="raw" needs exactly one value column, binary or string; the schema has %v`, valueFields))
		}
	case planpb.KafkaSource_JSON, planpb.KafkaSource_CSV:
	default:
		errs = append(errs, fmt.Errorf("unknown value format %v", c.format))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("source: read_kafka: %w", err)
	}
	return c, nil
}

// decode turns records of one partition into a batch of the output schema.
// Records with a null value (tombstones) have no row in the JSON and CSV
// formats (as Flink's deserializers skip them); they must have been
// removed by the caller, which counts rows.
func (c *kafkaColumns) decode(recs []*kgo.Record, mem memory.Allocator) (arrow.RecordBatch, error) {
	values, err := c.decodeValues(recs, mem)
	if err != nil {
		return nil, err
	}
	defer values.Release()
	n := len(recs)
	cols := make([]arrow.Array, c.out.NumFields())
	defer func() {
		for _, a := range cols {
			if a != nil {
				a.Release()
			}
		}
	}()
	for i := range cols {
		if v := c.fromValue[i]; v >= 0 {
			cols[i] = values.Column(v)
			cols[i].Retain()
			continue
		}
		cols[i] = buildMeta(c.meta[i], recs, mem)
	}
	return array.NewRecordBatch(c.out, cols, int64(n)), nil
}

func buildMeta(m kafkaMeta, recs []*kgo.Record, mem memory.Allocator) arrow.Array {
	switch m {
	case metaKey:
		b := array.NewBinaryBuilder(mem, arrow.BinaryTypes.Binary)
		defer b.Release()
		for _, r := range recs {
			if r.Key == nil {
				b.AppendNull()
			} else {
				b.Append(r.Key)
			}
		}
		return b.NewArray()
	case metaTimestamp:
		b := array.NewTimestampBuilder(mem, metaTypes[metaTimestamp].(*arrow.TimestampType))
		defer b.Release()
		for _, r := range recs {
			b.Append(arrow.Timestamp(r.Timestamp.UnixMilli()))
		}
		return b.NewArray()
	case metaPartition:
		b := array.NewInt32Builder(mem)
		defer b.Release()
		for _, r := range recs {
			b.Append(r.Partition)
		}
		return b.NewArray()
	case metaOffset:
		b := array.NewInt64Builder(mem)
		defer b.Release()
		for _, r := range recs {
			b.Append(r.Offset)
		}
		return b.NewArray()
	default: // metaTopic
		b := array.NewStringBuilder(mem)
		defer b.Release()
		for _, r := range recs {
			b.Append(r.Topic)
		}
		return b.NewArray()
	}
}

// decodeValues decodes the records' values into a batch of the value
// schema, columnar: the values of a batch go to arrow-go's JSON or CSV
// reader at once.
func (c *kafkaColumns) decodeValues(recs []*kgo.Record, mem memory.Allocator) (arrow.RecordBatch, error) {
	n := len(recs)
	switch c.format {
	case planpb.KafkaSource_RAW:
		f := c.value.Field(0)
		var b array.Builder
		if f.Type.ID() == arrow.STRING {
			sb := array.NewStringBuilder(mem)
			for _, r := range recs {
				if r.Value == nil {
					sb.AppendNull()
					continue
				}
				if !utf8.Valid(r.Value) {
					sb.Release()
					return nil, recordError(r, fmt.Errorf("the value is not UTF-8 text, which column %q (string) needs; declare it binary", f.Name))
				}
				sb.BinaryBuilder.Append(r.Value)
			}
			b = sb
		} else {
			bb := array.NewBinaryBuilder(mem, arrow.BinaryTypes.Binary)
			for _, r := range recs {
				if r.Value == nil {
					bb.AppendNull()
				} else {
					bb.Append(r.Value)
				}
			}
			b = bb
		}
		defer b.Release()
		col := b.NewArray()
		defer col.Release()
		return array.NewRecordBatch(c.value, []arrow.Array{col}, int64(n)), nil
	case planpb.KafkaSource_CSV:
		var buf bytes.Buffer
		for _, r := range recs {
			buf.Write(bytes.TrimRight(r.Value, "\r\n"))
			buf.WriteByte('\n')
		}
		rd := csv.NewReader(&buf, c.value, csv.WithChunk(-1), csv.WithAllocator(mem), csv.WithNullReader(true))
		defer rd.Release()
		return c.checkDecoded(rd.Next, rd.RecordBatch, rd.Err, recs, mem)
	default: // JSON
		var buf bytes.Buffer
		for _, r := range recs {
			buf.Write(r.Value)
			buf.WriteByte('\n')
		}
		rd := array.NewJSONReader(&buf, c.value, array.WithChunk(-1), array.WithAllocator(mem))
		defer rd.Release()
		return c.checkDecoded(rd.Next, rd.RecordBatch, rd.Err, recs, mem)
	}
}

// checkDecoded takes the one batch a reader made of recs; when it has not
// one row per record, or failed, each record is decoded alone to name the
// first one that does not decode.
func (c *kafkaColumns) checkDecoded(next func() bool, batch func() arrow.RecordBatch, errf func() error, recs []*kgo.Record, mem memory.Allocator) (arrow.RecordBatch, error) {
	var b arrow.RecordBatch
	if next() {
		b = batch()
		b.Retain()
	}
	err := errf()
	if err == nil && b != nil && b.NumRows() == int64(len(recs)) {
		return b, nil
	}
	if b != nil {
		b.Release()
	}
	for _, r := range recs {
		if e := c.decodeOne(r, mem); e != nil {
			return nil, recordError(r, e)
		}
	}
	if err == nil {
		err = fmt.Errorf("%d records decoded to %d rows", len(recs), rowsOf(b))
	}
	return nil, fmt.Errorf("source: read_kafka: topic %q partition %d: %w", recs[0].Topic, recs[0].Partition, err)
}

func rowsOf(b arrow.RecordBatch) int64 {
	if b == nil {
		return 0
	}
	return b.NumRows()
}

// decodeOne decodes one record's value, for the error of a batch: it must
// give exactly one row.
func (c *kafkaColumns) decodeOne(r *kgo.Record, mem memory.Allocator) error {
	var next func() bool
	var batch func() arrow.RecordBatch
	var errf func() error
	if c.format == planpb.KafkaSource_CSV {
		rd := csv.NewReader(bytes.NewReader(append(bytes.TrimRight(r.Value, "\r\n"), '\n')), c.value,
			csv.WithChunk(-1), csv.WithAllocator(mem), csv.WithNullReader(true))
		defer rd.Release()
		next, batch, errf = rd.Next, rd.RecordBatch, rd.Err
	} else {
		rd := array.NewJSONReader(bytes.NewReader(r.Value), c.value, array.WithChunk(-1), array.WithAllocator(mem))
		defer rd.Release()
		next, batch, errf = rd.Next, rd.RecordBatch, rd.Err
	}
	rows := int64(0)
	for next() {
		rows += batch().NumRows()
	}
	if err := errf(); err != nil {
		return err
	}
	if rows != 1 {
		return fmt.Errorf("the value holds %d rows, not one (%s)", rows, preview(r.Value))
	}
	return nil
}

func preview(v []byte) string {
	if len(v) > 80 {
		return fmt.Sprintf("%q...", v[:80])
	}
	return fmt.Sprintf("%q", v)
}

// recordError names the record that failed to decode.
func recordError(r *kgo.Record, err error) error {
	return fmt.Errorf("source: read_kafka: topic %q partition %d offset %d: the value does not decode: %w "+
		"(fix the producer, or start after this offset with starting_offsets)", r.Topic, r.Partition, r.Offset, err)
}
