package partition

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/internal/keygroup"
)

// CustomFunc chooses the channel, in [0, numChannels), of each row of batch:
// it returns one channel per row. It must not retain or release batch.
type CustomFunc func(batch arrow.RecordBatch, numChannels int) ([]int, error)

// Config configures New. Fields a kind does not use are ignored. New copies
// the Config and never modifies the caller's.
type Config struct {
	// NumChannels is the number of output channels of the producer subtask
	// for this edge: the consumer parallelism for all-to-all kinds, the
	// number of consumers of the pointwise connection for Rescale
	// (len(PointwiseOutputs(p, q, producer))), and 1 for Forward. Required.
	NumChannels int
	// KeyColumns are the indices, in the batch's schema, of the key columns
	// of Hash, in key order. Required for Hash.
	KeyColumns []int
	// MaxParallelism is the number of key groups of the consuming operator,
	// used by Hash. It must be the same number the consumer's state uses.
	// Default keygroup.DefaultMaxParallelism(NumChannels); planners should
	// pass it explicitly.
	MaxParallelism int
	// Rand chooses Rebalance's first channel and Shuffle's channels. Seed it
	// for reproducible tests; it is not safe for concurrent use, so give
	// each partitioner its own. Default: a generator seeded at random.
	Rand *rand.Rand
	// Allocator allocates the batches that Hash, Shuffle and Custom build.
	// Default memory.DefaultAllocator.
	Allocator memory.Allocator
	// Custom chooses the channels of Custom. Required for Custom.
	Custom CustomFunc
}

// withDefaults returns a copy of c with its slices copied and every unset
// field a kind uses set to its default.
func (c Config) withDefaults(kind Kind) Config {
	c.KeyColumns = slices.Clone(c.KeyColumns)
	if kind == Hash && c.MaxParallelism == 0 && c.NumChannels > 0 {
		c.MaxParallelism = keygroup.DefaultMaxParallelism(c.NumChannels)
	}
	if c.Rand == nil && (kind == Rebalance || kind == Shuffle) {
		c.Rand = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	if c.Allocator == nil {
		c.Allocator = memory.DefaultAllocator
	}
	return c
}

// validate reports every problem of c for kind in one error wrapping
// ErrInvalidConfig.
func (c Config) validate(kind Kind) error {
	if !kind.valid() {
		return fmt.Errorf("%w: unknown partitioner kind %s", ErrInvalidConfig, kind)
	}
	var problems []string
	switch {
	case c.NumChannels < 1:
		problems = append(problems, fmt.Sprintf("NumChannels is %d; want at least 1", c.NumChannels))
	case kind == Forward && c.NumChannels != 1:
		problems = append(problems, fmt.Sprintf(
			"NumChannels is %d; forward has exactly one channel (the consumer with the same "+
				"subtask index): a forward edge between operators of different parallelism must "+
				"be resolved by the planner (pipeline.forward-mismatch)", c.NumChannels))
	}
	if kind == Hash {
		if len(c.KeyColumns) == 0 {
			problems = append(problems, "KeyColumns is empty; hash needs at least one key column")
		}
		for _, k := range c.KeyColumns {
			if k < 0 {
				problems = append(problems, fmt.Sprintf("key column %d is negative", k))
			}
		}
		if c.NumChannels >= 1 {
			if err := keygroup.ValidateParallelism(c.NumChannels, c.MaxParallelism); err != nil {
				problems = append(problems, strings.TrimPrefix(err.Error(), keygroup.ErrInvalidParallelism.Error()+": "))
			}
		}
	}
	if kind == Custom && c.Custom == nil {
		problems = append(problems, "Custom is nil; custom needs a channel function")
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("%w for %s partitioner: %s", ErrInvalidConfig, kind, strings.Join(problems, "; "))
}
