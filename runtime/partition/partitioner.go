package partition

import (
	"math/rand/v2"

	"github.com/apache/arrow-go/v18/arrow"
)

// Part is the share of a batch for one output channel.
type Part struct {
	// Channel is the output channel, in [0, NumChannels).
	Channel int
	// Batch holds the part's rows in input order; never zero rows. The caller
	// of Split owns one reference to it and must release it.
	Batch arrow.RecordBatch
}

// Partitioner chooses the output channels of the rows of batches, as a
// Flink StreamPartitioner chooses the channel of each record. A Partitioner
// belongs to one producer subtask's output and keeps state between batches
// (the round-robin position, the random generator, scratch buffers): it is
// not safe for concurrent use.
type Partitioner interface {
	// Split returns the parts of batch, at most one per channel, in
	// ascending channel order, each holding its rows in input order. A batch
	// with no rows has no parts.
	//
	// Split only reads batch: the caller keeps its reference and still
	// releases it. The caller owns every returned Part.Batch (one reference
	// each, see ReleaseParts), also when it drops them unsent. A part may be
	// batch itself, retained rather than copied (whole-batch kinds,
	// Broadcast, and a split whose rows all go to one channel); Arrow batches
	// are immutable, so sharing is safe. On error no part is returned and
	// nothing is left to release.
	//
	// Split blocks only for the computation; it starts no goroutine that
	// outlives the call.
	Split(batch arrow.RecordBatch) ([]Part, error)
}

// ReleaseParts releases the batch of every part, for a caller that drops
// the result of Split.
func ReleaseParts(parts []Part) {
	for _, p := range parts {
		if p.Batch != nil {
			p.Batch.Release()
		}
	}
}

// New returns a Partitioner of the given kind. It copies and defaults cfg
// (the caller's Config is not modified) and reports every problem of it in
// one error wrapping ErrInvalidConfig.
func New(kind Kind, cfg Config) (Partitioner, error) {
	cfg = cfg.withDefaults(kind)
	if err := cfg.validate(kind); err != nil {
		return nil, err
	}
	if cfg.NumChannels == 1 && (kind == Hash || kind == Shuffle) {
		// Every row goes to the one channel: no hashing, no split.
		return fixedPartitioner{}, nil
	}
	switch kind {
	case Forward, Global:
		return fixedPartitioner{}, nil
	case Rebalance:
		// Flink's RebalancePartitioner starts at a random channel.
		return &roundRobinPartitioner{n: cfg.NumChannels, next: cfg.Rand.IntN(cfg.NumChannels)}, nil
	case Rescale:
		// Flink's RescalePartitioner starts at channel 0.
		return &roundRobinPartitioner{n: cfg.NumChannels}, nil
	case Broadcast:
		return broadcastPartitioner{n: cfg.NumChannels}, nil
	case Shuffle:
		return newRowPartitioner(cfg, shuffleChannels(cfg.Rand)), nil
	case Hash:
		return newRowPartitioner(cfg, hashChannels(cfg.KeyColumns, cfg.MaxParallelism, cfg.NumChannels)), nil
	default: // Custom; validate rejected every other kind.
		return newRowPartitioner(cfg, customChannels(cfg.Custom)), nil
	}
}

// whole returns the single part giving all of batch to channel.
func whole(batch arrow.RecordBatch, channel int) []Part {
	if batch.NumRows() == 0 {
		return nil
	}
	batch.Retain()
	return []Part{{Channel: channel, Batch: batch}}
}

// fixedPartitioner sends every batch to channel 0: Forward (the one channel
// of the pointwise connection) and Global (consumer 0).
type fixedPartitioner struct{}

func (fixedPartitioner) Split(batch arrow.RecordBatch) ([]Part, error) {
	return whole(batch, 0), nil
}

// roundRobinPartitioner sends whole batches to channels next, next+1, ...
// modulo n: Rebalance and Rescale.
type roundRobinPartitioner struct {
	n    int
	next int
}

func (p *roundRobinPartitioner) Split(batch arrow.RecordBatch) ([]Part, error) {
	if batch.NumRows() == 0 {
		return nil, nil
	}
	c := p.next
	p.next = (p.next + 1) % p.n
	return whole(batch, c), nil
}

// broadcastPartitioner gives every channel a reference to the batch.
type broadcastPartitioner struct{ n int }

func (p broadcastPartitioner) Split(batch arrow.RecordBatch) ([]Part, error) {
	if batch.NumRows() == 0 {
		return nil, nil
	}
	parts := make([]Part, p.n)
	for c := range parts {
		batch.Retain()
		parts[c] = Part{Channel: c, Batch: batch}
	}
	return parts, nil
}

// shuffleChannels chooses a uniformly random channel per row, as Flink's
// ShufflePartitioner does per record.
func shuffleChannels(r *rand.Rand) channelFunc {
	return func(batch arrow.RecordBatch, n int, dst []int32) error {
		for i := range dst {
			dst[i] = int32(r.IntN(n))
		}
		return nil
	}
}
