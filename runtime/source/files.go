package source

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
)

// batchIter is one open file's batches.
type batchIter interface {
	next(ctx context.Context) (arrow.RecordBatch, error) // io.EOF at the end
	// pos is the position just after the last batch next returned.
	pos() fileOffset
	close()
}

// fileOffset is the position in a file, encoded as the Offset of its split.
// Each format uses some of the fields (see the package doc).
type fileOffset struct {
	Row      int64 `json:"row,omitempty"`       // CSV: data rows returned; Parquet: row within RowGroup
	Byte     int64 `json:"byte,omitempty"`      // JSON lines: just after the last record returned
	Line     int64 `json:"line,omitempty"`      // JSON lines: the line Byte is on (1-based)
	RowGroup int   `json:"row_group,omitempty"` // Parquet
}

func (o fileOffset) isStart() bool { return o.Row == 0 && o.Byte == 0 && o.RowGroup == 0 }

// check reports what in o does not fit the format ("" when it fits).
func (o fileOffset) check(format planpb.FileSource_Format) string {
	if o.Row < 0 || o.Byte < 0 || o.Line < 0 || o.RowGroup < 0 {
		return "a position is negative"
	}
	switch format {
	case planpb.FileSource_CSV:
		if o.Byte != 0 || o.Line != 0 || o.RowGroup != 0 {
			return "it is not a CSV position"
		}
	case planpb.FileSource_JSONL:
		if o.Row != 0 || o.RowGroup != 0 {
			return "it is not a JSON lines position"
		}
		if o.Byte > 0 && o.Line == 0 {
			return "it has a byte offset but no line"
		}
	default:
		if o.Byte != 0 || o.Line != 0 {
			return "it is not a Parquet position"
		}
	}
	return ""
}

// fileSplit is one file of the reader's share and how far it was read.
type fileSplit struct {
	path string
	id   string
	at   fileOffset
	done bool
}

// fileReader reads this subtask's files one after another.
type fileReader struct {
	cfg    Config
	src    *planpb.FileSource
	splits []*fileSplit
	i      int       // the split being read
	cur    batchIter // open on splits[i], or nil
}

func openFiles(src *planpb.FileSource, cfg Config, restore map[string]SplitState) (Reader, error) {
	switch src.GetFormat() {
	case planpb.FileSource_CSV, planpb.FileSource_JSONL, planpb.FileSource_PARQUET:
	default:
		return nil, fmt.Errorf("source: unknown file format %s", src.GetFormat())
	}
	r := &fileReader{cfg: cfg, src: src}
	seen := make(map[string]int)
	for i, path := range src.GetPaths() {
		seen[path]++
		if i%cfg.Parallelism != cfg.Subtask {
			continue
		}
		s := &fileSplit{path: path, id: path}
		if k := seen[path]; k > 1 {
			s.id = fmt.Sprintf("%s#%d", path, k)
		}
		if st, ok := restore[s.id]; ok {
			switch {
			case st.Done:
				s.done = true
			case len(st.Offset) > 0:
				if err := DecodeOffset(s.id, st.Offset, &s.at); err != nil {
					return nil, err
				}
				if msg := s.at.check(src.GetFormat()); msg != "" {
					return nil, BadOffset(s.id, "offset %q: %s", st.Offset, msg)
				}
			}
		}
		r.splits = append(r.splits, s)
	}
	return r, nil
}

func (r *fileReader) Next(ctx context.Context) (arrow.RecordBatch, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, context.Cause(ctx)
		}
		if r.cur == nil {
			for r.i < len(r.splits) && r.splits[r.i].done {
				r.i++
			}
			if r.i == len(r.splits) {
				return nil, io.EOF
			}
			it, err := r.open(r.splits[r.i])
			if errors.Is(err, ErrBadOffset) {
				return nil, err // names the split
			}
			if err != nil {
				return nil, fmt.Errorf("source: %s: %w", r.splits[r.i].path, err)
			}
			r.cur = it
		}
		s := r.splits[r.i]
		b, err := r.cur.next(ctx)
		if errors.Is(err, io.EOF) {
			r.cur.close()
			r.cur = nil
			s.done = true
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("source: %s: %w", s.path, err)
		}
		s.at = r.cur.pos()
		return conform(b, r.cfg.Schema, s.path, r.cfg.Allocator)
	}
}

// LastSplit is the file the batch Next returned last was read from.
func (r *fileReader) LastSplit() string {
	if r.i < len(r.splits) {
		return r.splits[r.i].id
	}
	return ""
}

// PendingSplits are the files not read to their end, in reading order.
func (r *fileReader) PendingSplits() []string {
	var ids []string
	for _, s := range r.splits {
		if !s.done {
			ids = append(ids, s.id)
		}
	}
	return ids
}

// Snapshot returns the position of the reader's files.
func (r *fileReader) Snapshot() ([]SplitState, error) {
	out := make([]SplitState, 0, len(r.splits))
	for _, s := range r.splits {
		st := SplitState{Split: s.id, Done: s.done}
		if !s.done && !s.at.isStart() {
			st.Offset = EncodeOffset(s.at)
		}
		out = append(out, st)
	}
	return out, nil
}

func (r *fileReader) Close() error {
	if r.cur != nil {
		r.cur.close()
		r.cur = nil
	}
	r.i = len(r.splits)
	return nil
}

func (r *fileReader) open(s *fileSplit) (batchIter, error) {
	switch r.src.GetFormat() {
	case planpb.FileSource_CSV:
		return openCSV(s, r.src, r.cfg)
	case planpb.FileSource_JSONL:
		return openJSONL(s, r.cfg)
	default:
		return openParquet(s, r.cfg)
	}
}

// conform gives b the source's schema when only nullability or metadata
// differ (Parquet files carry their own), or when a column is large_string
// or large_binary where the source says string or binary: sources normalise
// both to one logical string (and binary) type, so that a file written by
// pandas unions with any other source. Other differences are errors.
func conform(b arrow.RecordBatch, want *arrow.Schema, path string, mem memory.Allocator) (arrow.RecordBatch, error) {
	got := b.Schema()
	if got.Equal(want) {
		return b, nil
	}
	defer b.Release()
	same := got.NumFields() == want.NumFields()
	narrow := make([]bool, got.NumFields())
	for i := 0; same && i < got.NumFields(); i++ {
		g, w := got.Field(i).Type, want.Field(i).Type
		narrow[i] = isLargeOf(g, w)
		same = got.Field(i).Name == want.Field(i).Name && (arrow.TypeEqual(g, w) || narrow[i])
	}
	if !same {
		return nil, fmt.Errorf("source: %s: schema %s differs from the source's %s", path, got, want)
	}
	cols := make([]arrow.Array, b.NumCols())
	for i, c := range b.Columns() {
		if !narrow[i] {
			c.Retain()
			cols[i] = c
			continue
		}
		ctx := compute.WithAllocator(context.Background(), mem)
		cast, err := compute.CastArray(ctx, c, compute.SafeCastOptions(want.Field(i).Type))
		if err != nil {
			for _, done := range cols[:i] {
				done.Release()
			}
			return nil, fmt.Errorf("source: %s: column %q: %w", path, want.Field(i).Name, err)
		}
		cols[i] = cast
	}
	out := array.NewRecordBatch(want, cols, b.NumRows())
	for _, c := range cols {
		c.Release()
	}
	return out, nil
}

// isLargeOf reports whether got is the 64-bit-offset form of want
// (large_string of string, large_binary of binary).
func isLargeOf(got, want arrow.DataType) bool {
	return got.ID() == arrow.LARGE_STRING && want.ID() == arrow.STRING ||
		got.ID() == arrow.LARGE_BINARY && want.ID() == arrow.BINARY
}

func fieldNames(s *arrow.Schema) []string {
	names := make([]string, s.NumFields())
	for i, f := range s.Fields() {
		names[i] = f.Name
	}
	return names
}
