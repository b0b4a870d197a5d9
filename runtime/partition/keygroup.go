package partition

import (
	"fmt"
	"math/bits"
	"strings"
)

// Bounds of the max parallelism, as Flink's KeyGroupRangeAssignment.
const (
	// MinDefaultMaxParallelism is the smallest max parallelism that
	// DefaultMaxParallelism returns.
	MinDefaultMaxParallelism = 128
	// UpperBoundMaxParallelism is the largest max parallelism (1<<15), that
	// is the largest number of key groups.
	UpperBoundMaxParallelism = 1 << 15
)

// DefaultMaxParallelism returns the max parallelism (the number of key
// groups) of an operator of parallelism p that sets none, as Flink:
// min(max(roundUpPow2(p + p/2), 128), 32768). A p <= 0 counts as 1.
//
// The max parallelism is fixed once state has been saved: the planner should
// compute it once (or take pipeline.max-parallelism) and pass the same number
// to partitioners and to the state backend.
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
// four little-endian bytes of hash (one body round: k *= 0xcc9e2d51,
// rotl 15, k *= 0x1b873593; h = rotl(k, 13)*5 + 0xe6546b64; then h ^= 4 and
// the fmix32 finalizer), made non-negative as Flink does: negated when
// negative, and 0 for math.MinInt32.
func MurmurMix(hash int32) int32 {
	m := int32(fmix32(mixH1(0, mixK1(uint32(hash))) ^ 4))
	if m < 0 {
		m = -m // math.MinInt32 stays negative
	}
	return max(m, 0)
}

// KeyGroupForHash returns the key group, in [0, maxParallelism), of a key
// whose hash is hash: MurmurMix(hash) % maxParallelism, as Flink's
// KeyGroupRangeAssignment.computeKeyGroupForKeyHash. It panics when
// maxParallelism is outside [1, UpperBoundMaxParallelism]; check it with
// ValidateParallelism first.
func KeyGroupForHash(hash int32, maxParallelism int) int {
	checkMaxParallelism("KeyGroupForHash", maxParallelism)
	return int(MurmurMix(hash)) % maxParallelism
}

// OperatorIndexForKeyGroup returns the subtask, in [0, p), that owns key
// group kg when an operator of parallelism p has maxP key groups:
// kg * p / maxP. It agrees with KeyGroupRange. It panics on arguments that
// ValidateParallelism rejects or on kg outside [0, maxP).
func OperatorIndexForKeyGroup(maxP, p, kg int) int {
	checkParallelism("OperatorIndexForKeyGroup", p, maxP)
	if kg < 0 || kg >= maxP {
		panic(fmt.Sprintf("partition: OperatorIndexForKeyGroup: key group %d is outside [0, %d)", kg, maxP))
	}
	return kg * p / maxP
}

// KeyGroupRange returns the inclusive range [start, end] of key groups that
// subtask i of an operator of parallelism p owns when it has maxP key
// groups: [(i*maxP+p-1)/p, ((i+1)*maxP-1)/p]. The ranges of subtasks 0..p-1
// are contiguous, non-empty (p <= maxP) and cover [0, maxP) exactly once, so
// a rescale moves whole ranges of state. It panics on arguments that
// ValidateParallelism rejects or on i outside [0, p).
func KeyGroupRange(maxP, p, i int) (start, end int) {
	checkParallelism("KeyGroupRange", p, maxP)
	if i < 0 || i >= p {
		panic(fmt.Sprintf("partition: KeyGroupRange: subtask %d is outside [0, %d)", i, p))
	}
	return (i*maxP + p - 1) / p, ((i+1)*maxP - 1) / p
}

func checkMaxParallelism(fn string, maxP int) {
	if maxP < 1 || maxP > UpperBoundMaxParallelism {
		panic(fmt.Sprintf("partition: %s: max parallelism %d is outside [1, %d]", fn, maxP, UpperBoundMaxParallelism))
	}
}

func checkParallelism(fn string, p, maxP int) {
	if err := ValidateParallelism(p, maxP); err != nil {
		panic(fmt.Sprintf("partition: %s: %v", fn, err))
	}
}
