package state

import "github.com/flinkgo/flinkgo/internal/keygroup"

// KeyGroupRange is an inclusive range of key groups [Start, End]: the
// range type of package keygroup under the name state's API uses (Options,
// Handle), so that code outside the module can name it.
type KeyGroupRange = keygroup.Range

// SubtaskKeyGroups returns the key groups that subtask i of an operator of
// parallelism p owns when the operator has maxP key groups:
// keygroup.SubtaskRange, under the name state's API uses. Like it, it panics
// on arguments that keygroup.ValidateParallelism rejects.
func SubtaskKeyGroups(maxP, p, i int) KeyGroupRange {
	return keygroup.SubtaskRange(maxP, p, i)
}
