package source

import (
	"bufio"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	arrowcsv "github.com/apache/arrow-go/v18/arrow/csv"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/flinkgo/flinkgo/udf/proto/planpb"
)

// batchIter is one open file's batches.
type batchIter interface {
	next(ctx context.Context) (arrow.RecordBatch, error) // io.EOF at the end
	close()
}

// fileReader reads this subtask's files one after another.
type fileReader struct {
	cfg   Config
	src   *planpb.FileSource
	paths []string
	cur   batchIter
	path  string
}

func openFiles(src *planpb.FileSource, cfg Config) (Reader, error) {
	switch src.GetFormat() {
	case planpb.FileSource_CSV, planpb.FileSource_JSONL, planpb.FileSource_PARQUET:
	default:
		return nil, fmt.Errorf("source: unknown file format %s", src.GetFormat())
	}
	r := &fileReader{cfg: cfg, src: src}
	for i, p := range src.GetPaths() {
		if i%cfg.Parallelism == cfg.Subtask {
			r.paths = append(r.paths, p)
		}
	}
	return r, nil
}

func (r *fileReader) Next(ctx context.Context) (arrow.RecordBatch, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, context.Cause(ctx)
		}
		if r.cur == nil {
			if len(r.paths) == 0 {
				return nil, io.EOF
			}
			r.path, r.paths = r.paths[0], r.paths[1:]
			it, err := r.open(r.path)
			if err != nil {
				return nil, fmt.Errorf("source: %s: %w", r.path, err)
			}
			r.cur = it
		}
		b, err := r.cur.next(ctx)
		if errors.Is(err, io.EOF) {
			r.cur.close()
			r.cur = nil
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("source: %s: %w", r.path, err)
		}
		return conform(b, r.cfg.Schema, r.path)
	}
}

func (r *fileReader) Close() error {
	if r.cur != nil {
		r.cur.close()
		r.cur = nil
	}
	r.paths = nil
	return nil
}

func (r *fileReader) open(path string) (batchIter, error) {
	switch r.src.GetFormat() {
	case planpb.FileSource_CSV:
		return openCSV(path, r.src, r.cfg)
	case planpb.FileSource_JSONL:
		return openJSONL(path, r.cfg)
	default:
		return openParquet(path, r.cfg)
	}
}

// csvIter reads one CSV file with arrow-go's reader. When a value does not
// parse, it rereads the file to report the line and column, which the fast
// reader does not know.
type csvIter struct {
	path string
	f    *os.File
	r    *arrowcsv.Reader
	src  *planpb.FileSource
	cfg  Config
}

func openCSV(path string, src *planpb.FileSource, cfg Config) (batchIter, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	var r *arrowcsv.Reader
	if src.GetCsvHasHeader() {
		// Columns are matched by header name: the schema may name some of
		// the file's columns, in any order; the others are skipped.
		names := fieldNames(cfg.Schema)
		types := make(map[string]arrow.DataType, len(names))
		for _, f := range cfg.Schema.Fields() {
			types[f.Name] = f.Type
		}
		opts := append(csvOptions(src, cfg), arrowcsv.WithIncludeColumns(names), arrowcsv.WithColumnTypes(types))
		r = arrowcsv.NewInferringReader(f, opts...)
	} else {
		r = arrowcsv.NewReader(f, cfg.Schema, csvOptions(src, cfg)...)
	}
	return &csvIter{path: path, f: f, r: r, src: src, cfg: cfg}, nil
}

func csvOptions(src *planpb.FileSource, cfg Config) []arrowcsv.Option {
	opts := []arrowcsv.Option{
		arrowcsv.WithHeader(src.GetCsvHasHeader()),
		arrowcsv.WithChunk(cfg.BatchRows),
		arrowcsv.WithAllocator(cfg.Allocator),
		arrowcsv.WithNullReader(true, ""),
	}
	if d := src.GetCsvDelimiter(); d != "" {
		opts = append(opts, arrowcsv.WithComma([]rune(d)[0]))
	}
	return opts
}

func (it *csvIter) next(context.Context) (arrow.RecordBatch, error) {
	if it.r.Next() {
		b := it.r.RecordBatch()
		b.Retain()
		return b, nil
	}
	if err := it.r.Err(); err != nil {
		if where := locateCSVError(it.path, it.src, it.cfg.Schema); where != "" {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		return nil, err
	}
	return nil, io.EOF
}

func (it *csvIter) close() {
	it.r.Release()
	_ = it.f.Close()
}

// locateCSVError finds the first line whose field count or values do not
// fit the schema, as "line N, column \"c\": cannot parse \"v\" as T".
func locateCSVError(path string, src *planpb.FileSource, schema *arrow.Schema) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	r := csv.NewReader(bufio.NewReader(f))
	r.FieldsPerRecord = -1
	if d := src.GetCsvDelimiter(); d != "" {
		r.Comma = []rune(d)[0]
	}
	// Where each schema column is in the file: by header name, else by
	// position.
	at := make([]int, schema.NumFields())
	for i := range at {
		at[i] = i
	}
	width := schema.NumFields()
	if src.GetCsvHasHeader() {
		header, err := r.Read()
		if err != nil {
			return ""
		}
		width = len(header)
		for i, f := range schema.Fields() {
			at[i] = slices.Index(header, f.Name)
			if at[i] < 0 {
				return fmt.Sprintf("the header has no column %q (it has %s)", f.Name, strings.Join(header, ", "))
			}
		}
	}
	for {
		rec, err := r.Read()
		line, _ := r.FieldPos(0)
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return fmt.Sprintf("line %d", pe.Line)
			}
			return ""
		}
		if len(rec) != width {
			return fmt.Sprintf("line %d has %d fields, want %d", line, len(rec), width)
		}
		for i, f := range schema.Fields() {
			v := rec[at[i]]
			if msg := checkCSVValue(v, f.Type); msg != "" {
				return fmt.Sprintf("line %d, column %q: cannot parse %q as %s", line, f.Name, v, f.Type)
			}
		}
	}
}

// checkCSVValue reports why v does not parse as t ("" when it does, or when
// t is not one it checks).
func checkCSVValue(v string, t arrow.DataType) string {
	if v == "" {
		return "" // null
	}
	var err error
	switch t.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64:
		_, err = strconv.ParseInt(v, 10, 64)
	case arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64:
		_, err = strconv.ParseUint(v, 10, 64)
	case arrow.FLOAT32, arrow.FLOAT64:
		_, err = strconv.ParseFloat(v, 64)
	case arrow.BOOL:
		switch strings.ToLower(v) {
		case "true", "false", "1", "0":
		default:
			err = errors.New("not a bool")
		}
	}
	if err != nil {
		return err.Error()
	}
	return ""
}

// conform gives b the source's schema when only nullability or metadata
// differ (Parquet files carry their own); other differences are errors.
func conform(b arrow.RecordBatch, want *arrow.Schema, path string) (arrow.RecordBatch, error) {
	got := b.Schema()
	if got.Equal(want) {
		return b, nil
	}
	same := got.NumFields() == want.NumFields()
	for i := 0; same && i < got.NumFields(); i++ {
		same = got.Field(i).Name == want.Field(i).Name && arrow.TypeEqual(got.Field(i).Type, want.Field(i).Type)
	}
	if !same {
		b.Release()
		return nil, fmt.Errorf("source: %s: schema %s differs from the source's %s", path, got, want)
	}
	out := array.NewRecordBatch(want, b.Columns(), b.NumRows())
	b.Release()
	return out, nil
}

func fieldNames(s *arrow.Schema) []string {
	names := make([]string, s.NumFields())
	for i, f := range s.Fields() {
		names[i] = f.Name
	}
	return names
}

// jsonIter reads one JSON-lines file.
type jsonIter struct {
	f *os.File
	r *array.JSONReader
}

func openJSONL(path string, cfg Config) (batchIter, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	r := array.NewJSONReader(f, cfg.Schema, array.WithChunk(cfg.BatchRows), array.WithAllocator(cfg.Allocator))
	return &jsonIter{f: f, r: r}, nil
}

func (it *jsonIter) next(context.Context) (arrow.RecordBatch, error) {
	if it.r.Next() {
		b := it.r.RecordBatch()
		b.Retain()
		return b, nil
	}
	if err := it.r.Err(); err != nil {
		return nil, err
	}
	return nil, io.EOF
}

func (it *jsonIter) close() {
	it.r.Release()
	_ = it.f.Close()
}

// parquetIter reads one Parquet file, all row groups, in order.
type parquetIter struct {
	f  *file.Reader
	rr pqarrow.RecordReader
}

func openParquet(path string, cfg Config) (batchIter, error) {
	f, err := file.OpenParquetFile(path, false)
	if err != nil {
		return nil, err
	}
	fr, err := pqarrow.NewFileReader(f, pqarrow.ArrowReadProperties{BatchSize: int64(cfg.BatchRows)}, cfg.Allocator)
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	rr, err := fr.GetRecordReader(context.Background(), nil, nil)
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	return &parquetIter{f: f, rr: rr}, nil
}

func (it *parquetIter) next(context.Context) (arrow.RecordBatch, error) {
	if it.rr.Next() {
		b := it.rr.RecordBatch()
		b.Retain()
		return b, nil
	}
	if err := it.rr.Err(); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return nil, io.EOF
}

func (it *parquetIter) close() {
	it.rr.Release()
	_ = it.f.Close()
}
