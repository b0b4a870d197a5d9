package sink

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	arrowcsv "github.com/apache/arrow-go/v18/arrow/csv"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
)

// An encoder writes one part file's rows in a format; finish completes the
// file (CSV flush, Parquet footer) without closing the underlying writer.
type encoder interface {
	write(b arrow.RecordBatch) error
	finish() error
}

type csvEncoder struct {
	schema *arrow.Schema
	w      *arrowcsv.Writer
	wrote  bool
}

func (e *csvEncoder) write(b arrow.RecordBatch) error {
	e.wrote = true
	plain, err := decodeDictionaries(b, e.schema)
	if err != nil {
		return err
	}
	defer plain.Release()
	return e.w.Write(plain)
}

// CSV has no dictionaries: dictionary columns are written as their values.
func decodedSchema(s *arrow.Schema) *arrow.Schema {
	fields := s.Fields()
	for i, f := range fields {
		if d, ok := f.Type.(*arrow.DictionaryType); ok {
			fields[i].Type = d.ValueType
		}
	}
	return arrow.NewSchema(fields, nil)
}

// decodeDictionaries returns b with every dictionary column replaced by
// its values (a new reference either way).
func decodeDictionaries(b arrow.RecordBatch, plain *arrow.Schema) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, b.NumCols())
	for i, c := range b.Columns() {
		d, ok := c.(*array.Dictionary)
		if !ok {
			c.Retain()
			cols[i] = c
			continue
		}
		values, err := compute.TakeArray(context.Background(), d.Dictionary(), d.Indices())
		if err != nil {
			for _, c := range cols[:i] {
				c.Release()
			}
			return nil, err
		}
		cols[i] = values
	}
	out := array.NewRecordBatch(plain, cols, b.NumRows())
	for _, c := range cols {
		c.Release()
	}
	return out, nil
}

// finish writes the header even when no row came, so every part is a
// valid CSV file of the sink's columns.
func (e *csvEncoder) finish() error {
	if !e.wrote {
		empty := array.NewRecordBuilder(memory.DefaultAllocator, e.schema)
		b := empty.NewRecordBatch()
		empty.Release()
		defer b.Release()
		if err := e.w.Write(b); err != nil {
			return err
		}
	}
	return e.w.Flush()
}

type parquetEncoder struct{ w *pqarrow.FileWriter }

func (e *parquetEncoder) write(b arrow.RecordBatch) error { return e.w.WriteBuffered(b) }
func (e *parquetEncoder) finish() error                   { return e.w.Close() }

// jsonEncoder writes one JSON object per row, keys in column order.
type jsonEncoder struct{ w io.Writer }

func (e *jsonEncoder) write(b arrow.RecordBatch) error {
	var sb strings.Builder
	names := make([][]byte, b.NumCols())
	for c, f := range b.Schema().Fields() {
		names[c], _ = json.Marshal(f.Name)
	}
	for r := range int(b.NumRows()) {
		sb.WriteByte('{')
		for c := range int(b.NumCols()) {
			if c > 0 {
				sb.WriteString(", ")
			}
			sb.Write(names[c])
			sb.WriteString(": ")
			v, err := json.Marshal(b.Column(c).GetOneForMarshal(r))
			if err != nil {
				return err
			}
			sb.Write(v)
		}
		sb.WriteString("}\n")
	}
	_, err := io.WriteString(e.w, sb.String())
	return err
}

func (e *jsonEncoder) finish() error { return nil }

// newEncoder starts a part file of format on w: the CSV header is written
// by the first batch (or by finish), the Parquet magic at once.
func newEncoder(format planpb.FileSource_Format, schema *arrow.Schema, w io.Writer) (encoder, error) {
	switch format {
	case planpb.FileSource_CSV:
		plain := decodedSchema(schema)
		return &csvEncoder{schema: plain, w: arrowcsv.NewWriter(w, plain, arrowcsv.WithHeader(true), arrowcsv.WithNullWriter(""))}, nil
	case planpb.FileSource_JSONL:
		return &jsonEncoder{w: w}, nil
	case planpb.FileSource_PARQUET:
		pw, err := pqarrow.NewFileWriter(schema, w, nil, pqarrow.DefaultWriterProps())
		if err != nil {
			return nil, err
		}
		return &parquetEncoder{w: pw}, nil
	}
	return nil, fmt.Errorf("unknown file format %s", format)
}

// extension names the part files of format; "" for an unknown format.
func extension(format planpb.FileSource_Format) string {
	switch format {
	case planpb.FileSource_CSV:
		return "csv"
	case planpb.FileSource_JSONL:
		return "jsonl"
	case planpb.FileSource_PARQUET:
		return "parquet"
	}
	return ""
}
