package partition

import (
	"fmt"
	"strings"
)

// Kind is a partitioning strategy, as Flink's StreamPartitioner subclasses.
// The zero Kind is invalid.
type Kind int

const (
	// Forward sends every batch to the consumer with the same subtask index,
	// the single channel 0 of a pointwise connection between operators of
	// equal parallelism.
	Forward Kind = iota + 1
	// Rebalance sends whole batches round robin over all consumers, starting
	// at a random one.
	Rebalance
	// Rescale sends whole batches round robin over the consumers of the
	// pointwise connection (see PointwiseOutputs), starting at channel 0.
	Rescale
	// Shuffle sends each row to a uniformly random consumer.
	Shuffle
	// Broadcast sends every batch to every consumer.
	Broadcast
	// Global sends every batch to consumer 0.
	Global
	// Hash sends each row to the consumer that owns its key group.
	Hash
	// Custom sends each row to the channel a user function chooses.
	Custom
)

var kindNames = [...]string{
	Forward:   "forward",
	Rebalance: "rebalance",
	Rescale:   "rescale",
	Shuffle:   "shuffle",
	Broadcast: "broadcast",
	Global:    "global",
	Hash:      "hash",
	Custom:    "custom",
}

// String returns the kind's lower-case name, as Flink prints partitioners
// ("forward", "rebalance", ...), or "Kind(n)" for an invalid kind.
func (k Kind) String() string {
	if k.valid() {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

func (k Kind) valid() bool { return k >= Forward && k <= Custom }

// IsPointwise reports whether the kind connects a producer to the subset of
// consumers given by PointwiseOutputs (Forward, Rescale) rather than to all
// consumers, as Flink's StreamPartitioner.isPointwise.
func (k Kind) IsPointwise() bool { return k == Forward || k == Rescale }

// ParseKind returns the Kind named s (as String prints it, any case), e.g.
// the value of pipeline.forward-mismatch ("rebalance", "rescale").
func ParseKind(s string) (Kind, error) {
	for k := Forward; k <= Custom; k++ {
		if strings.EqualFold(s, kindNames[k]) {
			return k, nil
		}
	}
	return 0, fmt.Errorf("partition: unknown partitioner %q; want one of %s", s, strings.Join(kindNames[Forward:], ", "))
}
