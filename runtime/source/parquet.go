package source

import (
	"context"
	"errors"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// parquetIter reads one Parquet file, all row groups, in order, from a row
// group and row within it.
type parquetIter struct {
	f         *file.Reader
	rr        pqarrow.RecordReader // nil when there is nothing left to read
	groupRows []int64              // rows of each row group
	at        fileOffset           // the next row to read, normalized
}

func openParquet(s *fileSplit, cfg Config) (batchIter, error) {
	in, err := openFile(cfg, s.path)
	if err != nil {
		return nil, err
	}
	f, err := file.NewParquetReader(in) // closes in
	if err != nil {
		_ = in.Close()
		return nil, err
	}
	it := &parquetIter{f: f, groupRows: make([]int64, f.NumRowGroups())}
	for g := range it.groupRows {
		it.groupRows[g] = f.MetaData().RowGroup(g).NumRows()
	}
	g, r := s.at.RowGroup, s.at.Row
	switch {
	case g > len(it.groupRows):
		err = BadOffset(s.id, "row group %d is past the file's %d row groups", g, len(it.groupRows))
	case g == len(it.groupRows) && r > 0:
		err = BadOffset(s.id, "row %d of row group %d is past the end of the file", r, g)
	case g < len(it.groupRows) && r > it.groupRows[g]:
		err = BadOffset(s.id, "row %d is past the %d rows of row group %d", r, it.groupRows[g], g)
	}
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	it.at = fileOffset{RowGroup: g, Row: r}
	it.normalize()
	if it.at.RowGroup == len(it.groupRows) {
		return it, nil
	}
	// Parallel decodes a batch's columns on goroutines of their own (rows
	// stay in order): a quarter faster on two cores (BenchmarkParquetSource).
	fr, err := pqarrow.NewFileReader(f, pqarrow.ArrowReadProperties{BatchSize: int64(cfg.BatchRows), Parallel: true}, cfg.Allocator)
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	groups := make([]int, 0, len(it.groupRows)-it.at.RowGroup)
	for g := it.at.RowGroup; g < len(it.groupRows); g++ {
		groups = append(groups, g)
	}
	it.rr, err = fr.GetRecordReader(context.Background(), nil, groups)
	if err == nil && it.at.Row > 0 {
		// Rows count from the first row group read.
		if err = it.rr.SeekToRow(it.at.Row); err != nil {
			it.rr.Release()
		}
	}
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	return it, nil
}

// normalize moves at past the ends of row groups.
func (it *parquetIter) normalize() {
	for it.at.RowGroup < len(it.groupRows) && it.at.Row >= it.groupRows[it.at.RowGroup] {
		it.at.Row -= it.groupRows[it.at.RowGroup]
		it.at.RowGroup++
	}
}

func (it *parquetIter) next(context.Context) (arrow.RecordBatch, error) {
	if it.rr == nil {
		return nil, io.EOF
	}
	if it.rr.Next() {
		b := it.rr.RecordBatch()
		b.Retain()
		it.at.Row += b.NumRows()
		it.normalize()
		return b, nil
	}
	if err := it.rr.Err(); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return nil, io.EOF
}

func (it *parquetIter) pos() fileOffset { return it.at }

func (it *parquetIter) close() {
	if it.rr != nil {
		it.rr.Release()
	}
	_ = it.f.Close()
}
