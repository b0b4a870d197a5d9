package source

import (
	"bufio"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	arrowcsv "github.com/apache/arrow-go/v18/arrow/csv"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
)

// csvIter reads one CSV file with arrow-go's reader, counting the rows it
// returns. When a value does not parse, it rereads the file to report the
// line and column, which the fast reader does not know.
type csvIter struct {
	path string
	f    *os.File
	r    *arrowcsv.Reader
	src  *planpb.FileSource
	cfg  Config
	rows int64 // data rows returned, from the start of the file
}

// openCSV opens s's file after the s.at.Row data rows already returned:
// arrow-go's reader reads ahead, so where they end is found by parsing them
// again with encoding/csv, and the reader reads the header (if any) followed
// by the rest of the file.
func openCSV(s *fileSplit, src *planpb.FileSource, cfg Config) (batchIter, error) {
	f, err := openFile(cfg, s.path)
	if err != nil {
		return nil, err
	}
	var in io.Reader = f
	if s.at.Row > 0 {
		headerEnd, off, err := skipCSVRows(f, src, s)
		if err != nil {
			_ = f.Close()
			return nil, err
		}
		in = io.NewSectionReader(f, off, math.MaxInt64-off)
		if headerEnd > 0 {
			in = io.MultiReader(io.NewSectionReader(f, 0, headerEnd), in)
		}
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
		r = arrowcsv.NewInferringReader(in, opts...)
	} else {
		r = arrowcsv.NewReader(in, cfg.Schema, csvOptions(src, cfg)...)
	}
	return &csvIter{path: s.path, f: f, r: r, src: src, cfg: cfg, rows: s.at.Row}, nil
}

// skipCSVRows parses the header (if any) and the first s.at.Row records of
// f, and returns where the header and those records end.
func skipCSVRows(f *os.File, src *planpb.FileSource, s *fileSplit) (headerEnd, off int64, err error) {
	r := csv.NewReader(bufio.NewReaderSize(f, 1<<16))
	r.FieldsPerRecord = -1
	r.ReuseRecord = true
	if d := src.GetCsvDelimiter(); d != "" {
		r.Comma = []rune(d)[0]
	}
	if src.GetCsvHasHeader() {
		if _, err := r.Read(); err != nil {
			if errors.Is(err, io.EOF) {
				return 0, 0, BadOffset(s.id, "row %d is past the end of the file, which is empty", s.at.Row)
			}
			return 0, 0, fmt.Errorf("skipping to row %d: %w", s.at.Row, err)
		}
		headerEnd = r.InputOffset()
	}
	for i := range s.at.Row {
		if _, err := r.Read(); err != nil {
			if errors.Is(err, io.EOF) {
				return 0, 0, BadOffset(s.id, "row %d is past the end of the file, which has %d rows", s.at.Row, i)
			}
			return 0, 0, fmt.Errorf("skipping to row %d: %w", s.at.Row, err)
		}
	}
	return headerEnd, r.InputOffset(), nil
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
	// arrow-go's reader still returns the batch in which a value failed to
	// parse, with a null in its place, and reports the error beside it: such
	// a batch is never passed on, or the null would reach the sink.
	if it.r.Next() && it.r.Err() == nil {
		b := it.r.RecordBatch()
		b.Retain()
		it.rows += b.NumRows()
		return b, nil
	}
	if err := it.r.Err(); err != nil {
		where := locateCSVError(it.cfg, it.path, it.src)
		if where == "" {
			// A value of a type the locator does not check: the rows of
			// the batch it is in.
			where = fmt.Sprintf("in data rows %d to %d (the header not counted)", it.rows+1, it.rows+int64(it.cfg.BatchRows))
		}
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			// Its line counts from where the reader started (after a
			// restore, mid-file); where has the file's line.
			err = pe.Err
		}
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	return nil, io.EOF
}

func (it *csvIter) pos() fileOffset { return fileOffset{Row: it.rows} }

func (it *csvIter) close() {
	it.r.Release()
	_ = it.f.Close()
}

// locateCSVError finds the first line whose field count or values do not
// fit the schema, as "line N, column \"c\": cannot parse \"v\" as T".
func locateCSVError(cfg Config, path string, src *planpb.FileSource) string {
	schema := cfg.Schema
	f, err := openFile(cfg, path)
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
// t is not one it checks), as arrow-go's CSV reader parses it.
func checkCSVValue(v string, t arrow.DataType) string {
	if v == "" {
		return "" // null
	}
	var err error
	switch t := t.(type) {
	case arrow.FixedWidthDataType:
		switch t.ID() {
		case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64:
			_, err = strconv.ParseInt(v, 10, t.BitWidth())
		case arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64:
			_, err = strconv.ParseUint(v, 10, t.BitWidth())
		case arrow.FLOAT32, arrow.FLOAT64:
			_, err = strconv.ParseFloat(v, t.BitWidth())
		case arrow.BOOL:
			_, err = strconv.ParseBool(v)
		case arrow.DATE32, arrow.DATE64:
			_, err = time.Parse("2006-01-02", v)
		case arrow.TIMESTAMP:
			// The reader appends through the builder: the same parse, zone
			// rules included.
			b := array.NewTimestampBuilder(memory.DefaultAllocator, t.(*arrow.TimestampType))
			defer b.Release()
			err = b.AppendValueFromString(v)
		}
	}
	if err != nil {
		return err.Error()
	}
	return ""
}
