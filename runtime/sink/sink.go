// Package sink writes a plan's sink batches: printed rows, part files (CSV,
// JSON lines, Parquet) and batches collected for the client.
//
// A file sink subtask writes one part file, `part-<subtask>.<ext>`, under
// the sink's directory. It writes to `.part-<subtask>.<ext>.inprogress` and
// renames on Close, so a reader never sees a half-written part; a canceled
// or failed sink removes its in-progress file (Abort). Exactly-once commits
// tied to checkpoints build on this later.
//
// This package does not know operators or exchanges.
package sink

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	arrowcsv "github.com/apache/arrow-go/v18/arrow/csv"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/flinkgo/flinkgo/udf/proto/planpb"
)

// Writer consumes one sink subtask's batches.
type Writer interface {
	// Write consumes b; the caller keeps ownership.
	Write(b arrow.RecordBatch) error
	// Close finishes and publishes what was written. Call once.
	Close() error
	// Abort drops what was written; after Close it does nothing. Safe to
	// call twice.
	Abort()
}

// Config says which sink subtask a writer is.
type Config struct {
	Schema      *arrow.Schema
	Subtask     int
	Parallelism int
	// Stdout receives printed rows, one Write per batch; it must be safe
	// for concurrent use by the print subtasks. Default os.Stdout.
	Stdout io.Writer
	// Collect receives the batches of a collect sink (retained: it must
	// release them). Required for collect sinks.
	Collect func(subtask int, b arrow.RecordBatch) error
}

// Open returns the writer of one subtask of sink.
func Open(s *planpb.Sink, cfg Config) (Writer, error) {
	if cfg.Schema == nil {
		return nil, errors.New("sink: Schema is nil")
	}
	switch k := s.GetKind().(type) {
	case *planpb.Sink_Print:
		out := cfg.Stdout
		if out == nil {
			out = os.Stdout
		}
		return &printWriter{out: out, prefix: printPrefix(cfg)}, nil
	case *planpb.Sink_Collect:
		if cfg.Collect == nil {
			return nil, errors.New("sink: collect sink without a Collect function")
		}
		return &collectWriter{cfg: cfg}, nil
	case *planpb.Sink_File:
		return openFile(k.File, cfg)
	}
	return nil, errors.New("sink: the sink node has no kind")
}

// printPrefix is Flink's: "<subtask+1>> " when several subtasks print.
func printPrefix(cfg Config) string {
	if cfg.Parallelism > 1 {
		return fmt.Sprintf("%d> ", cfg.Subtask+1)
	}
	return ""
}

type printWriter struct {
	out    io.Writer
	prefix string
}

func (w *printWriter) Write(b arrow.RecordBatch) error {
	var sb strings.Builder
	for r := range int(b.NumRows()) {
		sb.WriteString(w.prefix)
		sb.WriteString("+I[")
		for c := range int(b.NumCols()) {
			if c > 0 {
				sb.WriteString(", ")
			}
			sb.WriteString(b.Column(c).ValueStr(r))
		}
		sb.WriteString("]\n")
	}
	// One Write per batch: print subtasks share Stdout.
	_, err := io.WriteString(w.out, sb.String())
	return err
}

func (w *printWriter) Close() error { return nil }
func (w *printWriter) Abort()       {}

type collectWriter struct{ cfg Config }

func (w *collectWriter) Write(b arrow.RecordBatch) error {
	b.Retain()
	return w.cfg.Collect(w.cfg.Subtask, b)
}

func (w *collectWriter) Close() error { return nil }
func (w *collectWriter) Abort()       {}

// fileWriter writes one part file through an encoder.
type fileWriter struct {
	tmp, final string
	f          *os.File
	buf        *bufio.Writer
	enc        encoder
	done       bool
}

type encoder interface {
	write(b arrow.RecordBatch) error
	finish() error
}

func openFile(s *planpb.FileSink, cfg Config) (Writer, error) {
	ext := map[planpb.FileSource_Format]string{
		planpb.FileSource_CSV: "csv", planpb.FileSource_JSONL: "jsonl", planpb.FileSource_PARQUET: "parquet",
	}[s.GetFormat()]
	if ext == "" {
		return nil, fmt.Errorf("sink: unknown file format %s", s.GetFormat())
	}
	if err := os.MkdirAll(s.GetPath(), 0o755); err != nil {
		return nil, fmt.Errorf("sink: %w", err)
	}
	name := fmt.Sprintf("part-%d.%s", cfg.Subtask, ext)
	w := &fileWriter{
		tmp:   filepath.Join(s.GetPath(), "."+name+".inprogress"),
		final: filepath.Join(s.GetPath(), name),
	}
	f, err := os.Create(w.tmp)
	if err != nil {
		return nil, fmt.Errorf("sink: %w", err)
	}
	w.f, w.buf = f, bufio.NewWriterSize(f, 1<<20)
	switch s.GetFormat() {
	case planpb.FileSource_CSV:
		plain := decodedSchema(cfg.Schema)
		w.enc = &csvEncoder{schema: plain, w: arrowcsv.NewWriter(w.buf, plain, arrowcsv.WithHeader(true), arrowcsv.WithNullWriter(""))}
	case planpb.FileSource_JSONL:
		w.enc = &jsonEncoder{w: w.buf}
	default:
		pw, err := pqarrow.NewFileWriter(cfg.Schema, w.buf, nil, pqarrow.DefaultWriterProps())
		if err != nil {
			w.Abort()
			return nil, fmt.Errorf("sink: %s: %w", w.final, err)
		}
		w.enc = &parquetEncoder{w: pw}
	}
	return w, nil
}

func (w *fileWriter) Write(b arrow.RecordBatch) error {
	if err := w.enc.write(b); err != nil {
		return fmt.Errorf("sink: %s: %w", w.final, err)
	}
	return nil
}

func (w *fileWriter) Close() error {
	if w.done {
		return nil
	}
	w.done = true
	err := errors.Join(w.enc.finish(), w.buf.Flush(), w.f.Close())
	if err == nil {
		err = os.Rename(w.tmp, w.final)
	}
	if err != nil {
		_ = os.Remove(w.tmp)
		return fmt.Errorf("sink: %s: %w", w.final, err)
	}
	return nil
}

func (w *fileWriter) Abort() {
	if w.done {
		return
	}
	w.done = true
	_ = w.f.Close()
	_ = os.Remove(w.tmp)
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
