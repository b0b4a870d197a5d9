package keygroup

import (
	"errors"
	"fmt"
	"math/bits"
	"strings"

	"github.com/flinkgo/flinkgo/internal/murmur3"
)

// Bounds of the max parallelism, as Flink's KeyGroupRangeAssignment.
const (
	// MinDefaultMaxParallelism is the smallest max parallelism that
	// DefaultMaxParallelism returns.
	MinDefaultMaxParallelism = 128
	// UpperBoundMaxParallelism is the largest max parallelism (1<<15), that
	// is the largest number of key groups. It bounds the default and an
	// explicit pipeline.max-parallelism alike.
	UpperBoundMaxParallelism = 1 << 15
)

// ErrInvalidParallelism wraps the errors of ValidateParallelism and
// ValidateMaxParallelism: a parallelism or max parallelism out of range, or a
// parallelism above the max parallelism. The caller should wrap it once with
// the operator's name and fail planning or restore.
var ErrInvalidParallelism = errors.New("keygroup: invalid parallelism")

// DefaultMaxParallelism returns the max parallelism (the number of key
// groups) of an operator of parallelism p that sets none, as Flink:
// min(max(roundUpPow2(p + p/2), 128), 32768). A p <= 0 counts as 1.
//
// The max parallelism is fixed once state has been saved: the planner
// computes it once per job (or takes pipeline.max-parallelism) and passes the
// same number to partitioners and to the state backend.
func DefaultMaxParallelism(p int) int {
	if p < 1 {
		p = 1
	}
	if p > UpperBoundMaxParallelism {
		p = UpperBoundMaxParallelism
	}
	return min(max(roundUpPow2(p+p/2), MinDefaultMaxParallelism), UpperBoundMaxParallelism)
}

// roundUpPow2 returns the smallest power of two >= x, and 1 for x <= 1.
func roundUpPow2(x int) int {
	if x <= 1 {
		return 1
	}
	return 1 << bits.Len(uint(x-1))
}

// ValidateMaxParallelism returns an error wrapping ErrInvalidParallelism
// when maxP is outside [1, UpperBoundMaxParallelism], and nil otherwise.
func ValidateMaxParallelism(maxP int) error {
	if maxP < 1 || maxP > UpperBoundMaxParallelism {
		return fmt.Errorf("%w: max parallelism %d is outside [1, %d]", ErrInvalidParallelism, maxP, UpperBoundMaxParallelism)
	}
	return nil
}

// ValidateParallelism reports, in one error wrapping ErrInvalidParallelism,
// every problem of an operator with parallelism p and max parallelism maxP:
// maxP outside [1, UpperBoundMaxParallelism], p < 1, p > maxP. It returns nil
// when the key-group functions below may be called with them.
func ValidateParallelism(p, maxP int) error {
	var problems []string
	if maxP < 1 || maxP > UpperBoundMaxParallelism {
		problems = append(problems, fmt.Sprintf("max parallelism %d is outside [1, %d]", maxP, UpperBoundMaxParallelism))
	}
	if p < 1 {
		problems = append(problems, fmt.Sprintf("parallelism %d is not positive", p))
	} else if maxP >= 1 && p > maxP {
		problems = append(problems, fmt.Sprintf(
			"parallelism %d exceeds max parallelism %d (the number of key groups): "+
				"lower the parallelism to at most %d, or raise pipeline.max-parallelism "+
				"(which cannot change once state has been saved)", p, maxP, maxP))
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrInvalidParallelism, strings.Join(problems, "; "))
}

// MurmurMix spreads a 32-bit key hash over non-negative ints as Flink's
// MathUtils.murmurHash(int): the MurmurHash3 x86_32 hash, seed 0, of the
// four little-endian bytes of hash (one body round, then h ^= 4 and the
// finalizer), made non-negative as Flink does: negated when negative, and 0
// for math.MinInt32.
func MurmurMix(hash int32) int32 {
	m := int32(murmur3.Fmix32(murmur3.MixH1(0, murmur3.MixK1(uint32(hash))) ^ 4))
	if m < 0 {
		m = -m // math.MinInt32 stays negative
	}
	return max(m, 0)
}

// ForHash returns the key group, in [0, maxP), of a key whose hash is hash:
// MurmurMix(hash) % maxP, as Flink's
// KeyGroupRangeAssignment.computeKeyGroupForKeyHash. It panics when maxP is
// outside [1, UpperBoundMaxParallelism]; check it with
// ValidateMaxParallelism first.
func ForHash(hash int32, maxP int) int {
	if err := ValidateMaxParallelism(maxP); err != nil {
		panic(fmt.Sprintf("keygroup: ForHash: %v", err))
	}
	return int(MurmurMix(hash)) % maxP
}

// Subtask returns the subtask, in [0, p), that owns key group kg when an
// operator of parallelism p has maxP key groups: kg * p / maxP, as Flink's
// computeOperatorIndexForKeyGroup. It agrees with SubtaskRange. It panics on
// arguments that ValidateParallelism rejects or on kg outside [0, maxP).
func Subtask(maxP, p, kg int) int {
	checkParallelism("Subtask", p, maxP)
	if kg < 0 || kg >= maxP {
		panic(fmt.Sprintf("keygroup: Subtask: key group %d is outside [0, %d)", kg, maxP))
	}
	return kg * p / maxP
}

// SubtaskRange returns the key groups that subtask i of an operator of
// parallelism p owns when it has maxP key groups:
// [(i*maxP+p-1)/p, ((i+1)*maxP-1)/p]. The ranges of subtasks 0..p-1 are
// contiguous, non-empty (p <= maxP) and cover [0, maxP) exactly once, so a
// rescale moves whole ranges of state. It panics on arguments that
// ValidateParallelism rejects or on i outside [0, p).
func SubtaskRange(maxP, p, i int) Range {
	checkParallelism("SubtaskRange", p, maxP)
	if i < 0 || i >= p {
		panic(fmt.Sprintf("keygroup: SubtaskRange: subtask %d is outside [0, %d)", i, p))
	}
	return Range{Start: (i*maxP + p - 1) / p, End: ((i+1)*maxP - 1) / p}
}

func checkParallelism(fn string, p, maxP int) {
	if err := ValidateParallelism(p, maxP); err != nil {
		panic(fmt.Sprintf("keygroup: %s: %v", fn, err))
	}
}

// Range is an inclusive range of key groups [Start, End], as Flink's
// KeyGroupRange. A range with End < Start is empty. Its JSON form is part of
// the checkpoint format (state handles store it).
type Range struct {
	Start int `json:"start"`
	End   int `json:"end"`
}

// Contains reports whether kg is in r.
func (r Range) Contains(kg int) bool { return kg >= r.Start && kg <= r.End }

// Intersect returns the key groups in both r and o, and false when there are
// none.
func (r Range) Intersect(o Range) (Range, bool) {
	i := Range{Start: max(r.Start, o.Start), End: min(r.End, o.End)}
	return i, i.Start <= i.End
}

// Len returns the number of key groups in r, 0 when r is empty.
func (r Range) Len() int { return max(r.End-r.Start+1, 0) }

// String formats r as "[start, end]".
func (r Range) String() string { return fmt.Sprintf("[%d, %d]", r.Start, r.End) }
