package datagen

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/float16"

	"github.com/flinkgo/flinkgo/runtime/connector"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
	"github.com/flinkgo/flinkgo/runtime/source"
)

// datagen generates the rows of its ranges (bounded) or lanes (unbounded).
type datagen struct {
	cfg    connector.ReaderConfig
	seed   int64
	ranges *source.RowRanges // bounded
	lanes  []lane            // unbounded: a min-heap on the next row
	rows   []int64           // the rows of the batch being built
	pace   source.Pacer      // rows per second of this subtask
}

// lane k generates the rows k, k+source.SplitCount, k+2*source.SplitCount, …; seq rows of
// it were returned.
type lane struct {
	k   int64
	seq int64
}

func (l lane) row() int64 { return l.k + l.seq*source.SplitCount }

func (l lane) id() string { return fmt.Sprintf("lane-%d-of-%d", l.k, source.SplitCount) }

func openReader(src *planpb.DatagenSource, cfg connector.ReaderConfig, restore map[string]connector.SplitState) (connector.Reader, error) {
	for _, f := range cfg.Schema.Fields() {
		if !generatable(f.Type) {
			return nil, fmt.Errorf("source: datagen cannot generate column %q of type %s (supported: integers, floats, bool, string, binary, timestamp, date, time, duration, decimal128)", f.Name, f.Type)
		}
	}
	if src.GetRows() < 0 || !(src.GetRowsPerSecond() >= 0) || math.IsInf(src.GetRowsPerSecond(), 1) {
		return nil, fmt.Errorf("source: datagen rows (%d) and rows_per_second (%g) must not be negative (and the rate finite)", src.GetRows(), src.GetRowsPerSecond())
	}
	for _, f := range cfg.Schema.Fields() {
		// A generated string holds its column's name, on every row.
		if len(f.Name) > NameLimit {
			return nil, fmt.Errorf("source: datagen column name of %d bytes, above the limit of %d (datagen.NameLimit)", len(f.Name), NameLimit)
		}
	}
	g := &datagen{cfg: cfg, seed: src.GetSeed(), pace: source.Pacer{Left: -1}}
	// Each subtask keeps to its share of the rate: that of its rows or lanes.
	var share float64
	if n := src.GetRows(); n > 0 {
		rs, err := source.SplitRows(n, cfg, restore)
		if err != nil {
			return nil, err
		}
		g.ranges, share = rs, float64(rs.Owned)/float64(n)
		g.pace.Left = rs.Left()
	} else {
		for k := int64(cfg.Subtask); k < source.SplitCount; k += int64(cfg.Parallelism) {
			l := lane{k: k}
			st, ok := restore[l.id()]
			if ok && st.Done {
				return nil, source.BadOffset(l.id(), "it is marked done, but lanes of unbounded rows never end")
			}
			if ok && len(st.Offset) > 0 {
				var off source.SeqOffset
				if err := source.DecodeOffset(l.id(), st.Offset, &off); err != nil {
					return nil, err
				}
				if off.Next < 0 {
					return nil, source.BadOffset(l.id(), "row %d is negative", off.Next)
				}
				l.seq = off.Next
			}
			g.lanes = append(g.lanes, l)
		}
		for i := len(g.lanes)/2 - 1; i >= 0; i-- {
			g.siftDown(i)
		}
		share = float64(len(g.lanes)) / source.SplitCount
	}
	g.pace.Rate = src.GetRowsPerSecond() * share
	return g, nil
}

func generatable(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64,
		arrow.FLOAT16, arrow.FLOAT32, arrow.FLOAT64, arrow.BOOL, arrow.STRING, arrow.LARGE_STRING,
		arrow.BINARY, arrow.LARGE_BINARY, arrow.TIMESTAMP, arrow.DATE32, arrow.DATE64,
		arrow.TIME32, arrow.TIME64, arrow.DURATION, arrow.DECIMAL128:
		return true
	}
	return false
}

func (g *datagen) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if err := ctx.Err(); err != nil {
		return nil, context.Cause(ctx)
	}
	n := int64(g.cfg.BatchRows)
	n = g.pace.Limit(n)
	g.rows = g.rows[:0]
	if g.ranges != nil {
		a, b, last, ok := g.ranges.Peek(func(int64) int64 { return n })
		if !ok {
			return nil, io.EOF
		}
		if err := g.pace.Wait(ctx, b-a); err != nil {
			return nil, err
		}
		g.ranges.Commit(b, last)
		for r := a; r < b; r++ {
			g.rows = append(g.rows, r)
		}
	} else {
		if len(g.lanes) == 0 {
			return nil, io.EOF // more subtasks than lanes
		}
		if err := g.pace.Wait(ctx, n); err != nil {
			return nil, err
		}
		// Merge the lanes: rows in increasing order.
		for range n {
			g.rows = append(g.rows, g.lanes[0].row())
			g.lanes[0].seq++
			g.siftDown(0)
		}
	}
	b := array.NewRecordBuilder(g.cfg.Allocator, g.cfg.Schema)
	defer b.Release()
	fields := g.cfg.Schema.Fields() // a copy: once per batch, not per row
	builders := b.Fields()
	for c, f := range fields {
		builders[c].Reserve(len(g.rows))
		// The common columns without a type switch per row.
		switch b := builders[c].(type) {
		case *array.Int64Builder:
			b.AppendValues(g.rows, nil)
		case *array.Float64Builder:
			for _, row := range g.rows {
				b.UnsafeAppend(float64(source.Mix(g.seed, row, c)>>11) / (1 << 53))
			}
		case *array.StringBuilder:
			appendNamedRows(b.BinaryBuilder, f.Name, g.rows)
		case *array.BinaryBuilder:
			appendNamedRows(b, f.Name, g.rows)
		default:
			for _, row := range g.rows {
				appendValue(b, f, row, source.Mix(g.seed, row, c))
			}
		}
	}
	return b.NewRecordBatch(), nil
}

// siftDown restores the heap order of g.lanes below i.
func (g *datagen) siftDown(i int) {
	h := g.lanes
	for {
		least := i
		if c := 2*i + 1; c < len(h) && h[c].row() < h[least].row() {
			least = c
		}
		if c := 2*i + 2; c < len(h) && h[c].row() < h[least].row() {
			least = c
		}
		if least == i {
			return
		}
		h[i], h[least] = h[least], h[i]
		i = least
	}
}

// Snapshot returns the position of the reader's ranges or lanes.
func (g *datagen) Snapshot() ([]connector.SplitState, error) {
	if g.ranges != nil {
		return g.ranges.Snapshot(), nil
	}
	lanes := slices.SortedFunc(slices.Values(g.lanes), func(a, b lane) int { return cmp.Compare(a.k, b.k) })
	out := make([]connector.SplitState, 0, len(lanes))
	for _, l := range lanes {
		s := connector.SplitState{Split: l.id()}
		if l.seq > 0 {
			s.Offset = source.EncodeOffset(source.SeqOffset{Next: l.seq})
		}
		out = append(out, s)
	}
	return out, nil
}

// NameLimit bounds a datagen column's name, which its generated
// strings repeat on every row.
const NameLimit = 1 << 10

// appendNamedRows appends appendValue's string for each row ("<name>-<row>")
// to b, formatted in one reused buffer: fmt per row was most of a string
// column's cost.
func appendNamedRows(b *array.BinaryBuilder, name string, rows []int64) {
	buf := append(make([]byte, 0, len(name)+21), name...)
	buf = append(buf, '-')
	prefix := len(buf)
	b.ReserveData(len(rows) * (prefix + 7))
	for _, row := range rows {
		buf = strconv.AppendInt(buf[:prefix], row, 10)
		b.Append(buf)
	}
}

func appendValue(b array.Builder, f arrow.Field, row int64, bits uint64) {
	switch b := b.(type) {
	case *array.Int8Builder:
		b.Append(int8(row))
	case *array.Int16Builder:
		b.Append(int16(row))
	case *array.Int32Builder:
		b.Append(int32(row))
	case *array.Int64Builder:
		b.Append(row)
	case *array.Uint8Builder:
		b.Append(uint8(row))
	case *array.Uint16Builder:
		b.Append(uint16(row))
	case *array.Uint32Builder:
		b.Append(uint32(row))
	case *array.Uint64Builder:
		b.Append(uint64(row))
	case *array.Float32Builder:
		b.Append(float32(float64(bits>>11) / (1 << 53)))
	case *array.Float64Builder:
		b.Append(float64(bits>>11) / (1 << 53))
	case *array.BooleanBuilder:
		b.Append(bits&1 == 1)
	case *array.StringBuilder:
		b.Append(fmt.Sprintf("%s-%d", f.Name, row))
	case *array.LargeStringBuilder:
		b.Append(fmt.Sprintf("%s-%d", f.Name, row))
	case *array.TimestampBuilder:
		b.Append(arrow.Timestamp(row))
	case *array.Date32Builder:
		b.Append(arrow.Date32(row))
	case *array.Date64Builder:
		b.Append(arrow.Date64(row))
	case *array.Float16Builder:
		b.Append(float16.New(float32(float64(bits>>11) / (1 << 53))))
	case *array.BinaryBuilder: // binary and large_binary
		b.Append([]byte(fmt.Sprintf("%s-%d", f.Name, row)))
	case *array.Time32Builder:
		b.Append(arrow.Time32(row))
	case *array.Time64Builder:
		b.Append(arrow.Time64(row))
	case *array.DurationBuilder:
		b.Append(arrow.Duration(row))
	case *array.Decimal128Builder:
		scale := f.Type.(*arrow.Decimal128Type).Scale
		b.Append(decimal128.FromI64(row).Mul(decimal128.GetScaleMultiplier(int(scale))))
	}
}

func (g *datagen) Close() error { return nil }

// PendingRecords are the rows due by the datagen's rate that Next has not
// returned yet (connector.Backlog).
func (g *datagen) PendingRecords() int64 { return g.pace.Pending() }

// ThrottledTime is the time the datagen slept for its rate
// (connector.Throttled).
func (g *datagen) ThrottledTime() time.Duration { return g.pace.Waited }

var (
	_ connector.Backlog   = (*datagen)(nil)
	_ connector.Throttled = (*datagen)(nil)
)
