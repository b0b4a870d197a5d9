package task

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flinkgo/flinkgo/runtime/metrics"
)

// inbox is one subtask's input: one bounded queue per producer (Flink's
// input channels, each with its own credit), so that the task can stop
// reading the producers that delivered a checkpoint's barrier while it
// waits for the others (alignment) without buffering what they send
// meanwhile: a blocked producer's queue fills and the producer waits, as
// a back-pressured one. A single shared queue could not do that: a
// producer past its barrier would fill it and keep the others' barriers
// out.
type inbox struct {
	// producers counts the producers, each of which ends its stream once.
	producers int
	// capacity is how many messages the inbox holds, shared out among its
	// producers: each producer's queue holds perProducer() before that
	// producer blocks.
	capacity int

	mu     sync.Mutex
	queues [][]queued // per producer, oldest first
	seq    uint64     // arrival order across producers
	// ready holds a token when a message was queued since the consumer
	// last looked; space[p] when producer p's queue lost one.
	ready chan struct{}
	space []chan struct{}
	// bytes is the size of the batches queued (Flink's inputQueueSize),
	// peak the largest it has been: the task's metrics once it is built
	// (metrics.Task.InputQueueBytes).
	bytes, peak *atomic.Int64
}

// queued is a message and its place in the inbox's arrival order (0 for
// a barrier that overtook: it is taken before anything else).
type queued struct {
	message
	seq uint64
}

func newInbox(capacity int) *inbox {
	return &inbox{capacity: max(capacity, 1), ready: make(chan struct{}, 1), bytes: new(atomic.Int64), peak: new(atomic.Int64)}
}

// perProducer is how many messages one producer's queue holds: its share
// of the capacity, and at least two (Flink's exclusive buffers per
// channel), so that a producer can send a batch while its last one is
// being taken.
func (in *inbox) perProducer() int {
	return max(2, (in.capacity+in.producers-1)/max(in.producers, 1))
}

// connect adds a producer and returns its index among the inbox's.
func (in *inbox) connect() int {
	in.producers++
	in.queues = append(in.queues, nil)
	in.space = append(in.space, make(chan struct{}, 1))
	return in.producers - 1
}

// put queues m from producer m.producer, waiting while that producer's
// queue is full. It takes ownership of m's batch, also when it fails.
func (in *inbox) put(ctx context.Context, m message) error {
	for {
		in.mu.Lock()
		if len(in.queues[m.producer]) < in.perProducer() {
			in.enqueue(m)
			in.mu.Unlock()
			signal(in.ready)
			return nil
		}
		in.mu.Unlock()
		select {
		case <-in.space[m.producer]:
		case <-ctx.Done():
			if m.batch != nil {
				m.batch.Release()
			}
			return context.Cause(ctx)
		}
	}
}

// tryPut is put without waiting: false when the queue is full.
func (in *inbox) tryPut(m message) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	if len(in.queues[m.producer]) >= in.perProducer() {
		return false
	}
	in.enqueue(m)
	signal(in.ready)
	return true
}

// putPriority queues the barrier m ahead of the batches its producer
// queued since its last control message, without waiting for space (a
// barrier takes no credit, as Flink's priority events): an unaligned
// checkpoint's barrier (FLIP-76). It overtakes batches only: watermarks,
// statuses and an earlier barrier keep their order. m.overtook is set to
// the batches it overtook, which follow it in the queue when it is taken.
func (in *inbox) putPriority(m message) {
	in.mu.Lock()
	q := in.queues[m.producer]
	at := len(q)
	for at > 0 && q[at-1].batch != nil {
		at--
	}
	m.overtook = len(q) - at
	q = append(q, queued{})
	copy(q[at+1:], q[at:])
	q[at] = queued{message: m}
	in.queues[m.producer] = q
	in.mu.Unlock()
	signal(in.ready)
}

// prefill queues a restored channel's batches (an unaligned checkpoint's
// channel state) as producer p's, input `input`, before any producer
// runs: they are taken before anything sent later, and p waits until its
// queue is below its share again. It takes ownership of the batches.
func (in *inbox) prefill(p, input int, batches []arrow.RecordBatch) {
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, b := range batches {
		in.enqueue(message{input: input, producer: p, batch: b})
	}
}

// overtaken returns, retained, the batches of the first n messages queued
// by producer p: those a barrier of p just taken had overtaken. Task
// goroutine only (no one else takes from the queue).
func (in *inbox) overtaken(p, n int) []arrow.RecordBatch {
	in.mu.Lock()
	defer in.mu.Unlock()
	out := make([]arrow.RecordBatch, 0, n)
	for _, m := range in.queues[p][:n] {
		m.batch.Retain()
		out = append(out, m.batch)
	}
	return out
}

// enqueue appends m to its producer's queue; in.mu is held.
func (in *inbox) enqueue(m message) {
	in.seq++
	in.queues[m.producer] = append(in.queues[m.producer], queued{m, in.seq})
	if m.batch != nil {
		// in.mu orders the writers of peak.
		if n := in.bytes.Add(metrics.BatchBytes(m.batch)); n > in.peak.Load() {
			in.peak.Store(n)
		}
	}
}

// take removes and returns the oldest message of the producers not
// blocked (blocked may be nil), false when they have none queued.
func (in *inbox) take(blocked []bool) (message, bool) {
	in.mu.Lock()
	best := -1
	for p, q := range in.queues {
		if len(q) == 0 || (blocked != nil && blocked[p]) {
			continue
		}
		if best < 0 || q[0].seq < in.queues[best][0].seq {
			best = p
		}
	}
	if best < 0 {
		in.mu.Unlock()
		return message{}, false
	}
	m := in.queues[best][0]
	in.queues[best][0] = queued{}
	in.queues[best] = in.queues[best][1:]
	if len(in.queues[best]) == 0 {
		in.queues[best] = in.queues[best][:0:0] // let the array go
	}
	if m.batch != nil {
		in.bytes.Add(-metrics.BatchBytes(m.batch))
	}
	in.mu.Unlock()
	signal(in.space[best])
	return m.message, true
}

// drain frees every batch queued, once no task runs.
func (in *inbox) drain() {
	in.mu.Lock()
	defer in.mu.Unlock()
	for p, q := range in.queues {
		for _, m := range q {
			if m.batch != nil {
				m.batch.Release()
			}
		}
		in.queues[p] = nil
	}
	in.bytes.Store(0)
}

// signal leaves a token in c unless one is there already.
func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}
