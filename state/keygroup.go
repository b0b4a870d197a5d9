package state

import (
	"fmt"

	"github.com/flinkgo/flinkgo/runtime/partition"
)

// KeyGroupRange is an inclusive range of key groups [Start, End], as Flink's
// KeyGroupRange. A range with End < Start is empty.
type KeyGroupRange struct {
	Start int `json:"start"`
	End   int `json:"end"`
}

// SubtaskKeyGroups returns the key groups that subtask i of an operator of
// parallelism p owns when the operator has maxP key groups
// (partition.KeyGroupRange). Like it, it panics on arguments that
// partition.ValidateParallelism rejects.
func SubtaskKeyGroups(maxP, p, i int) KeyGroupRange {
	start, end := partition.KeyGroupRange(maxP, p, i)
	return KeyGroupRange{Start: start, End: end}
}

// Contains reports whether kg is in r.
func (r KeyGroupRange) Contains(kg int) bool { return kg >= r.Start && kg <= r.End }

// Intersect returns the key groups in both r and o, and false when there are
// none.
func (r KeyGroupRange) Intersect(o KeyGroupRange) (KeyGroupRange, bool) {
	i := KeyGroupRange{Start: max(r.Start, o.Start), End: min(r.End, o.End)}
	return i, i.Start <= i.End
}

// Len returns the number of key groups in r, 0 when r is empty.
func (r KeyGroupRange) Len() int { return max(r.End-r.Start+1, 0) }

// String formats r as "[start, end]".
func (r KeyGroupRange) String() string { return fmt.Sprintf("[%d, %d]", r.Start, r.End) }
