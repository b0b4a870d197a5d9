package partition

import (
	"context"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/internal/keygroup"
	"github.com/flinkgo/flinkgo/internal/murmur3"
)

// channelFunc writes the channel, in [0, n), of each row of batch into dst
// (len batch.NumRows()).
type channelFunc func(batch arrow.RecordBatch, n int, dst []int32) error

// rowPartitioner chooses a channel per row and splits the batch by channel
// with Arrow's take: Hash, Shuffle and Custom.
type rowPartitioner struct {
	n          int
	ctx        context.Context // carries the allocator for take
	channelsOf channelFunc
	channels   []int32 // per row, reused
	counts     []int   // per channel, reused
	// indices (per row) and ends (per channel) are reused: take copies the
	// rows out and its output never refers to the index array.
	indices []int32
	ends    []int
}

func newRowPartitioner(cfg Config, f channelFunc) *rowPartitioner {
	return &rowPartitioner{
		n:          cfg.NumChannels,
		ctx:        compute.WithAllocator(context.Background(), cfg.Allocator),
		channelsOf: f,
	}
}

func (p *rowPartitioner) Split(batch arrow.RecordBatch) ([]Part, error) {
	rows := batch.NumRows()
	if rows == 0 {
		return nil, nil
	}
	if rows > math.MaxInt32 {
		return nil, fmt.Errorf("partition: batch of %d rows is too large to split (at most %d)", rows, math.MaxInt32)
	}
	p.channels = grow(p.channels, int(rows))
	if err := p.channelsOf(batch, p.n, p.channels); err != nil {
		return nil, err
	}
	return p.split(batch, p.channels)
}

// split gives each channel the rows of batch whose entry in channels names
// it, in row order.
func (p *rowPartitioner) split(batch arrow.RecordBatch, channels []int32) ([]Part, error) {
	p.counts = grow(p.counts, p.n)
	counts := p.counts
	clear(counts)
	for _, c := range channels {
		counts[c]++
	}
	nonEmpty := 0
	for c, k := range counts {
		if k == len(channels) {
			return whole(batch, c), nil // no copy when every row goes to one channel
		}
		if k > 0 {
			nonEmpty++
		}
	}

	// Counting sort of the row indices by channel; each channel's run keeps
	// row order. One take gathers the rows grouped by channel, and each
	// channel's part is a slice of it: one kernel call and one buffer per
	// column for the whole batch, however many channels (a take per
	// channel cost a kernel call and an allocation per column and channel).
	p.indices = grow(p.indices, len(channels))
	indices := p.indices
	p.ends = grow(p.ends, p.n)
	ends := p.ends // after the loop below: the end of each run
	off := 0
	for c, k := range counts {
		ends[c] = off
		off += k
	}
	for row, c := range channels {
		indices[ends[c]] = int32(row)
		ends[c]++
	}
	grouped, err := p.take(batch, indices)
	if err != nil {
		return nil, fmt.Errorf("partition: take rows by channel: %w", err)
	}
	defer grouped.Release() // each part holds its own reference to the buffers

	parts := make([]Part, 0, nonEmpty)
	start := int64(0)
	for c, k := range counts {
		if k == 0 {
			continue
		}
		parts = append(parts, Part{Channel: c, Batch: grouped.NewSlice(start, start+int64(k))})
		start += int64(k)
	}
	return parts, nil
}

// take returns a new batch with the rows of batch at indices, in that
// order; it does not keep indices.
func (p *rowPartitioner) take(batch arrow.RecordBatch, indices []int32) (arrow.RecordBatch, error) {
	buf := memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(indices))
	idx := array.NewData(arrow.PrimitiveTypes.Int32, len(indices), []*memory.Buffer{nil, buf}, nil, 0, 0)
	defer idx.Release()
	// The indices are in range by construction.
	out, err := compute.Take(p.ctx, compute.TakeOptions{BoundsCheck: false},
		&compute.RecordDatum{Value: batch}, &compute.ArrayDatum{Value: idx})
	if err != nil {
		return nil, err
	}
	rd, ok := out.(*compute.RecordDatum)
	if !ok {
		out.Release()
		return nil, fmt.Errorf("take returned a %s, not a record batch", out.Kind())
	}
	return rd.Value, nil // the datum's reference passes to the caller
}

// hashChannels sends each row to the consumer owning its key group:
// keygroup.Subtask(maxP, n, keygroup.ForHash(rowHash, maxP)), with
// the owner of each key group looked up in a table.
func hashChannels(keyCols []int, maxP, n int) channelFunc {
	var h rowHasher
	owner := make([]int32, maxP)
	for kg := range owner {
		owner[kg] = int32(keygroup.Subtask(maxP, n, kg))
	}
	mask := uint32(maxP - 1)
	pow2 := maxP&(maxP-1) == 0
	channel := func(hash uint32) int32 {
		// MurmurMix is non-negative, so % is the same in uint32.
		if pow2 {
			return owner[uint32(keygroup.MurmurMix(int32(hash)))&mask]
		}
		return owner[uint32(keygroup.MurmurMix(int32(hash)))%uint32(maxP)]
	}
	var small smallIntChannels
	return func(batch arrow.RecordBatch, _ int, dst []int32) error {
		if len(keyCols) == 1 && checkKeyColumns(batch.Schema(), keyCols) == nil {
			if col, ok := batch.Column(keyCols[0]).(*array.Int64); ok && col.NullN() == 0 {
				small.channels(col.Int64Values(), dst, channel)
				return nil
			}
		}
		hashes, err := h.hash(batch, keyCols)
		if err != nil {
			return err
		}
		for i, hash := range hashes {
			dst[i] = channel(hash)
		}
		return nil
	}
}

// smallIntKeys bounds the int64 keys whose channel is remembered.
const smallIntKeys = 1 << 16

// smallIntChannels remembers the channel of small non-negative int64 keys
// (ids, codes: the common keys), so that their rows are not hashed again:
// channels[k] is 1 + the channel of key k, 0 until it is known.
type smallIntChannels struct{ known []int32 }

func (s *smallIntChannels) channels(vals []int64, dst []int32, channel func(uint32) int32) {
	for i, v := range vals {
		if uint64(v) >= smallIntKeys {
			dst[i] = channel(murmur3.Uint64(uint64(v)))
			continue
		}
		if int(v) < len(s.known) && s.known[v] > 0 {
			dst[i] = s.known[v] - 1
			continue
		}
		c := channel(murmur3.Uint64(uint64(v)))
		if need := int(v) + 1; need > len(s.known) {
			s.known = append(s.known, make([]int32, need-len(s.known))...)
		}
		s.known[v] = c + 1
		dst[i] = c
	}
}

// customChannels asks f for the channels and checks them.
func customChannels(f CustomFunc) channelFunc {
	return func(batch arrow.RecordBatch, n int, dst []int32) error {
		channels, err := f(batch, n)
		if err != nil {
			return fmt.Errorf("partition: custom partitioner: %w", err)
		}
		if len(channels) != len(dst) {
			return fmt.Errorf("%w: custom partitioner returned %d channels for a batch of %d rows",
				ErrInvalidChannel, len(channels), len(dst))
		}
		for row, c := range channels {
			if c < 0 || c >= n {
				return fmt.Errorf("%w: custom partitioner returned channel %d for row %d; want 0 <= channel < %d",
					ErrInvalidChannel, c, row, n)
			}
			dst[row] = int32(c)
		}
		return nil
	}
}
