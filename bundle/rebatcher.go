package bundle

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// RebatcherConfig configures a Rebatcher.
type RebatcherConfig struct {
	// Rows is the number of rows of every batch but the last of a flush.
	// Must be positive.
	Rows int
	// MaxBytes caps the estimated size of one batch, so that no message to
	// the worker exceeds its limit. Must be positive. A batch always holds
	// at least one row, however large.
	MaxBytes int64
	// Allocator is used to concatenate small pieces; nil means
	// memory.DefaultAllocator.
	Allocator memory.Allocator
}

// Rebatcher cuts a stream of record batches of one schema into batches of
// exactly Rows rows, or fewer when MaxBytes is reached first. It slices
// without copying where it can and concatenates only pieces that straddle
// a cut. A batch of exactly Rows rows under the byte cap that arrives with
// nothing buffered passes through as the same object, so one input batch
// gives one output batch.
//
// Sizes are estimated per input batch as the bytes of its buffers divided by
// its rows. For an input that is itself a slice of a larger batch this
// over-estimates, which only makes batches smaller.
//
// A Rebatcher is not safe for concurrent use.
type Rebatcher struct {
	cfg    RebatcherConfig
	schema *arrow.Schema
	pieces []arrow.RecordBatch // retained; together rows rows, bytes bytes
	rows   int64
	bytes  int64
}

// NewRebatcher validates cfg and returns an empty Rebatcher.
func NewRebatcher(cfg RebatcherConfig) (*Rebatcher, error) {
	var problems []string
	if cfg.Rows <= 0 {
		problems = append(problems, fmt.Sprintf("Rows is %d, must be positive", cfg.Rows))
	}
	if cfg.MaxBytes <= 0 {
		problems = append(problems, fmt.Sprintf("MaxBytes is %d, must be positive", cfg.MaxBytes))
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("bundle: invalid rebatcher config: %s", strings.Join(problems, "; "))
	}
	if cfg.Allocator == nil {
		cfg.Allocator = memory.DefaultAllocator
	}
	return &Rebatcher{cfg: cfg}, nil
}

// Buffered returns the number of rows held back for the next batch.
func (r *Rebatcher) Buffered() int { return int(r.rows) }

// Add takes the rows of b and returns the batches it completed. The caller
// keeps ownership of b and owns the returned batches. On error nothing is
// returned and the buffered rows are dropped.
func (r *Rebatcher) Add(b arrow.RecordBatch) (out []arrow.RecordBatch, err error) {
	n := b.NumRows()
	if n == 0 {
		return nil, nil
	}
	if r.schema == nil {
		r.schema = b.Schema()
	} else if !r.schema.Equal(b.Schema()) {
		return nil, fmt.Errorf("bundle: rebatch: batch schema %s differs from the stream's %s", b.Schema(), r.schema)
	}
	defer func() {
		if err != nil {
			releaseAll(out)
			out = nil
			r.Release()
		}
	}()
	perRow := bytesPerRow(b)
	rowsCap := int64(r.cfg.Rows)
	for off := int64(0); off < n; {
		take := min(n-off, rowsCap-r.rows)
		if perRow > 0 {
			take = min(take, (r.cfg.MaxBytes-r.bytes)/perRow)
		}
		if take <= 0 {
			if r.rows > 0 { // the next row does not fit: cut first
				cut, err := r.cut()
				if err != nil {
					return out, err
				}
				out = append(out, cut)
				continue
			}
			take = 1 // one row over the cap still has to go
		}
		piece := b
		if off == 0 && take == n {
			b.Retain()
		} else {
			piece = b.NewSlice(off, off+take)
		}
		r.pieces = append(r.pieces, piece)
		r.rows += take
		r.bytes += take * perRow
		off += take
		if r.rows == rowsCap || (perRow > 0 && r.bytes+perRow > r.cfg.MaxBytes) {
			cut, err := r.cut()
			if err != nil {
				return out, err
			}
			out = append(out, cut)
		}
	}
	return out, nil
}

// Flush returns the buffered rows as one batch, owned by the caller, or nil
// when nothing is buffered.
func (r *Rebatcher) Flush() (arrow.RecordBatch, error) {
	if r.rows == 0 {
		return nil, nil
	}
	return r.cut()
}

// Release drops the buffered rows. The Rebatcher stays usable.
func (r *Rebatcher) Release() {
	releaseAll(r.pieces)
	r.reset()
}

// cut turns the buffered pieces into one batch: the piece itself when there
// is one, else a concatenation.
func (r *Rebatcher) cut() (arrow.RecordBatch, error) {
	pieces, rows := r.pieces, r.rows
	r.reset()
	if len(pieces) == 1 {
		return pieces[0], nil
	}
	defer releaseAll(pieces)
	cols := make([]arrow.Array, len(r.schema.Fields()))
	defer releaseAll(cols)
	parts := make([]arrow.Array, len(pieces))
	for i := range cols {
		for j, p := range pieces {
			parts[j] = p.Column(i)
		}
		col, err := array.Concatenate(parts, r.cfg.Allocator)
		if err != nil {
			return nil, fmt.Errorf("bundle: rebatch: concatenate column %q: %w", r.schema.Field(i).Name, err)
		}
		cols[i] = col
	}
	return array.NewRecordBatch(r.schema, cols, rows), nil
}

func (r *Rebatcher) reset() {
	r.pieces = nil
	r.rows, r.bytes = 0, 0
}

// bytesPerRow estimates a row's size from b's buffers, rounding up; 0 when
// b has no buffers (a null-typed column, no columns).
func bytesPerRow(b arrow.RecordBatch) int64 {
	seen := make(map[*memory.Buffer]struct{})
	var total int64
	for _, c := range b.Columns() {
		total += dataBytes(c.Data(), seen)
	}
	n := b.NumRows()
	return (total + n - 1) / n
}

func dataBytes(d arrow.ArrayData, seen map[*memory.Buffer]struct{}) int64 {
	var total int64
	for _, buf := range d.Buffers() {
		if buf == nil {
			continue
		}
		if _, ok := seen[buf]; !ok {
			seen[buf] = struct{}{}
			total += int64(buf.Len())
		}
	}
	for _, child := range d.Children() {
		total += dataBytes(child, seen)
	}
	if dict, ok := d.Dictionary().(*array.Data); ok && dict != nil {
		total += dataBytes(dict, seen)
	}
	return total
}

// releaseAll releases every non-nil element; T is a batch or an array.
func releaseAll[T interface{ Release() }](xs []T) {
	for _, x := range xs {
		if any(x) != nil {
			x.Release()
		}
	}
}
