package partition

import "fmt"

// Pointwise connection of p producer subtasks to q consumer subtasks, as
// Flink's ExecutionVertex wiring of a POINTWISE edge (Forward, Rescale).
// When p >= q, consumer i reads producers [i*p/q, (i+1)*p/q) and each
// producer feeds one consumer; otherwise producer j feeds consumers
// [(j*q+p-1)/p, ((j+1)*q+p-1)/p) and each consumer reads one producer. The
// ranges are contiguous, non-empty and cover every subtask exactly once.
//
// The functions panic when p or q is not positive or the subtask index is
// out of range: the planner has validated parallelisms before wiring.

// PointwiseInputs returns the producers, in ascending order, that consumer
// reads from in a pointwise connection of p producers to q consumers.
func PointwiseInputs(p, q, consumer int) []int {
	checkConnection("PointwiseInputs", p, q, "consumer", consumer, q)
	if p >= q {
		return span(consumer*p/q, (consumer+1)*p/q)
	}
	// The one producer j with consumer in [(j*q+p-1)/p, ((j+1)*q+p-1)/p),
	// that is ceil(j*q/p) <= consumer < ceil((j+1)*q/p).
	return []int{consumer * p / q}
}

// PointwiseOutputs returns the consumers, in ascending order, that producer
// feeds in a pointwise connection of p producers to q consumers. Channel c of
// the producer's output is consumer PointwiseOutputs(p, q, producer)[c].
func PointwiseOutputs(p, q, producer int) []int {
	checkConnection("PointwiseOutputs", p, q, "producer", producer, p)
	if p < q {
		return span((producer*q+p-1)/p, ((producer+1)*q+p-1)/p)
	}
	// The one consumer i with producer in [i*p/q, (i+1)*p/q), that is
	// i = ceil((producer+1)*q/p) - 1.
	return []int{((producer+1)*q+p-1)/p - 1}
}

// Outputs returns the consumers that producer feeds over an edge of the
// given kind: PointwiseOutputs for pointwise kinds (Forward, Rescale), every
// consumer 0..q-1 otherwise. Channel c of the producer's partitioner is
// consumer Outputs(...)[c], and len(Outputs(...)) is its Config.NumChannels.
// It panics as PointwiseOutputs does.
func Outputs(kind Kind, p, q, producer int) []int {
	if kind.IsPointwise() {
		return PointwiseOutputs(p, q, producer)
	}
	checkConnection("Outputs", p, q, "producer", producer, p)
	return AllToAll(q)
}

// Inputs returns the producers that consumer reads from over an edge of the
// given kind: PointwiseInputs for pointwise kinds, every producer 0..p-1
// otherwise. It panics as PointwiseInputs does.
func Inputs(kind Kind, p, q, consumer int) []int {
	if kind.IsPointwise() {
		return PointwiseInputs(p, q, consumer)
	}
	checkConnection("Inputs", p, q, "consumer", consumer, q)
	return AllToAll(p)
}

// AllToAll returns 0..n-1: the peers of any subtask in an all-to-all
// connection to n subtasks.
func AllToAll(n int) []int {
	return span(0, n)
}

// span returns start..end-1.
func span(start, end int) []int {
	s := make([]int, 0, max(end-start, 0))
	for i := start; i < end; i++ {
		s = append(s, i)
	}
	return s
}

func checkConnection(fn string, p, q int, role string, index, count int) {
	if p < 1 || q < 1 {
		panic(fmt.Sprintf("partition: %s: parallelisms must be positive, got %d producers and %d consumers", fn, p, q))
	}
	if index < 0 || index >= count {
		panic(fmt.Sprintf("partition: %s: %s %d is outside [0, %d)", fn, role, index, count))
	}
}
