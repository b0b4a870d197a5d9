package source

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
)

// BenchmarkParquetSource reads a 2 M-row file of the Nexmark bids shape
// (three int64 columns and a timestamp, snappy, one row group per 1 M
// rows, as pyarrow writes them) through the Parquet source: the job in front of
// collect_speed.py's collect().
func BenchmarkParquetSource(b *testing.B) {
	const rows = 2_000_000
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "auction", Type: arrow.PrimitiveTypes.Int64},
		{Name: "bidder", Type: arrow.PrimitiveTypes.Int64},
		{Name: "price", Type: arrow.PrimitiveTypes.Int64},
		{Name: "date_time", Type: &arrow.TimestampType{Unit: arrow.Millisecond}},
	}, nil)
	path := filepath.Join(b.TempDir(), "bids.parquet")
	writeBids(b, path, schema, rows)
	src := fileSource(planpb.FileSource_PARQUET, path)
	for b.Loop() {
		r, err := Open(src, Config{Schema: schema, Parallelism: 1})
		if err != nil {
			b.Fatal(err)
		}
		n := int64(0)
		for {
			batch, err := r.Next(context.Background())
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			n += batch.NumRows()
			batch.Release()
		}
		if err := r.Close(); err != nil {
			b.Fatal(err)
		}
		if n != rows {
			b.Fatalf("read %d rows, want %d", n, rows)
		}
	}
	b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

func writeBids(b *testing.B, path string, schema *arrow.Schema, rows int) {
	b.Helper()
	rb := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer rb.Release()
	for i := range rows {
		rb.Field(0).(*array.Int64Builder).Append(int64(1000 + i*7919%1000))
		rb.Field(1).(*array.Int64Builder).Append(int64(1 + i*104729%100_000))
		rb.Field(2).(*array.Int64Builder).Append(int64(1 + i*15485863%10_000_000))
		rb.Field(3).(*array.TimestampBuilder).Append(arrow.Timestamp(1_767_225_600_000 + int64(i)))
	}
	batch := rb.NewRecordBatch()
	defer batch.Release()
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	props := parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(1<<20), parquet.WithCompression(compress.Codecs.Snappy))
	w, err := pqarrow.NewFileWriter(schema, f, props, pqarrow.DefaultWriterProps())
	if err != nil {
		b.Fatal(err)
	}
	if err := w.Write(batch); err != nil {
		b.Fatal(err)
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
}
