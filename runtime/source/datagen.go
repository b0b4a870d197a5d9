package source

import (
	"context"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/float16"

	"github.com/flinkgo/flinkgo/udf/proto/planpb"
)

// The generator's values are a pure function of (seed, row, column), so a
// run is reproducible at any parallelism and tests can compute the expected
// data themselves:
//
//	integers: the row index
//	floats:   uniform in [0, 1): top 53 bits of mix(seed, row, column) / 2^53
//	          (float16: that value rounded to half precision)
//	bool:     lowest bit of mix(seed, row, column)
//	strings and binary: "<column name>-<row index>"
//	timestamps, dates, times and durations: the row index in the type's unit
//	decimals: the row index (its unscaled value is row * 10^scale)
//
// mix is splitmix64 over seed ^ (row * 0x9E3779B97F4A7C15) ^ (column << 32).
func mix(seed, row int64, column int) uint64 {
	z := uint64(seed) ^ uint64(row)*0x9E3779B97F4A7C15 ^ uint64(column)<<32
	z += 0x9E3779B97F4A7C15
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}

type datagen struct {
	cfg    Config
	seed   int64
	next   int64 // next row index
	end    int64 // exclusive; -1 when unbounded
	stride int64 // 1 for a contiguous range, p when unbounded
	// rate limiting: rows per second of this subtask, and when it started
	rate  float64
	start time.Time
	sent  int64
}

func newDatagen(src *planpb.DatagenSource, cfg Config) (Reader, error) {
	for _, f := range cfg.Schema.Fields() {
		if !generatable(f.Type) {
			return nil, fmt.Errorf("source: datagen cannot generate column %q of type %s (supported: integers, floats, bool, string, binary, timestamp, date, time, duration, decimal128)", f.Name, f.Type)
		}
	}
	if src.GetRows() < 0 || src.GetRowsPerSecond() < 0 {
		return nil, fmt.Errorf("source: datagen rows (%d) and rows_per_second (%g) must not be negative", src.GetRows(), src.GetRowsPerSecond())
	}
	p, i := int64(cfg.Parallelism), int64(cfg.Subtask)
	g := &datagen{cfg: cfg, seed: src.GetSeed(), rate: src.GetRowsPerSecond() / float64(p)}
	if n := src.GetRows(); n > 0 {
		g.next, g.end, g.stride = i*n/p, (i+1)*n/p, 1
	} else {
		g.next, g.end, g.stride = i, -1, p
	}
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
	if g.end >= 0 && g.next >= g.end {
		return nil, io.EOF
	}
	n := int64(g.cfg.BatchRows)
	if g.end >= 0 {
		n = min(n, g.end-g.next)
	}
	if g.rate > 0 {
		// Keep to the rate: batches of about a tenth of a second.
		n = max(1, min(n, int64(math.Ceil(g.rate/10))))
		if err := g.wait(ctx, n); err != nil {
			return nil, err
		}
	}
	b := array.NewRecordBuilder(g.cfg.Allocator, g.cfg.Schema)
	defer b.Release()
	fields := g.cfg.Schema.Fields() // a copy: once per batch, not per row
	builders := b.Fields()
	for c, f := range fields {
		builders[c].Reserve(int(n))
		for r := range n {
			row := g.next + r*g.stride
			appendValue(builders[c], f, row, mix(g.seed, row, c))
		}
	}
	g.next += n * g.stride
	g.sent += n
	return b.NewRecordBatch(), nil
}

// wait sleeps until sending n more rows keeps to the rate.
func (g *datagen) wait(ctx context.Context, n int64) error {
	if g.start.IsZero() {
		g.start = time.Now()
	}
	due := g.start.Add(time.Duration(float64(g.sent+n) / g.rate * float64(time.Second)))
	if d := time.Until(due); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	return nil
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
