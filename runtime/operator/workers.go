package operator

import (
	"fmt"
	"sync"
)

// WorkerPool is the resizable pool of Python workers of one running operator
// subtask (package workerpool's Pool).
type WorkerPool interface {
	// Resize sets the number of workers; it does not block.
	Resize(n int) error
	// Workers is the number of workers serving or ready to.
	Workers() int
	// Settled reports whether the latest resize has taken full effect:
	// the new workers took batches, the retired ones are gone.
	Settled() bool
}

// WorkerPools is a job's record of the worker pools of its stateless UDF
// operators: how many workers each operator runs in all (set by an in-place
// rescale, kept across restarts) and the pools of its running subtasks, so
// that a rescale resizes them without restarting the job. Safe for
// concurrent use; a nil *WorkerPools means one worker per subtask and no
// in-place resizing.
type WorkerPools struct {
	mu      sync.Mutex
	workers map[string]int                // by operator uid: workers of all its subtasks
	live    map[string]map[int]WorkerPool // by operator uid, then subtask
}

// NewWorkerPools returns an empty record: one worker per subtask.
func NewWorkerPools() *WorkerPools {
	return &WorkerPools{workers: map[string]int{}, live: map[string]map[int]WorkerPool{}}
}

// Share is how many of total workers subtask i of parallelism p runs: the
// total spread as evenly as it goes, the first subtasks taking one more.
func Share(total, p, i int) int {
	n := total / p
	if i < total%p {
		n++
	}
	return n
}

// Start is how many workers subtask i of operator uid (of parallelism p)
// starts with: its share of the operator's workers, 1 without a record.
func (w *WorkerPools) Start(uid string, i, p int) int {
	if w == nil {
		return 1
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	total, ok := w.workers[uid]
	if !ok || total < p {
		return 1
	}
	return Share(total, p, i)
}

// Register records the running pool of subtask i of operator uid until the
// returned function is called (when the subtask is released).
func (w *WorkerPools) Register(uid string, i int, pool WorkerPool) (unregister func()) {
	if w == nil {
		return func() {}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.live[uid] == nil {
		w.live[uid] = map[int]WorkerPool{}
	}
	w.live[uid][i] = pool
	return func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.live[uid][i] == pool { // a later attempt's subtask may have replaced it
			delete(w.live[uid], i)
		}
	}
}

// Resize sets operator uid, of parallelism p, to total workers (at least p)
// and resizes the pools of its running subtasks to their shares. The record
// is kept even when no subtask runs now: the next attempt starts with it.
func (w *WorkerPools) Resize(uid string, p, total int) error {
	if total < p {
		return fmt.Errorf("operator uid %q: %d workers cannot serve its %d subtasks (each runs at least one)", uid, total, p)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.workers[uid] = total
	for i, pool := range w.live[uid] {
		if err := pool.Resize(Share(total, p, i)); err != nil {
			return fmt.Errorf("operator uid %q subtask %d: %w", uid, i, err)
		}
	}
	return nil
}

// Workers returns the workers of operator uid (of parallelism p): those its
// running subtasks serve with, else its record, else one per subtask.
func (w *WorkerPools) Workers(uid string, p int) int {
	if w == nil {
		return p
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if live := w.live[uid]; len(live) > 0 {
		n := 0
		for _, pool := range live {
			n += pool.Workers()
		}
		return n
	}
	if total, ok := w.workers[uid]; ok && total >= p {
		return total
	}
	return p
}

// Settled reports whether operator uid runs total workers with every
// resize of its running subtasks' pools in full effect (Pool.Settled).
func (w *WorkerPools) Settled(uid string, total int) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, pool := range w.live[uid] {
		if !pool.Settled() {
			return false
		}
		n += pool.Workers()
	}
	return n == total
}

// Forget drops the record of operator uid: after a rescale that changes its
// parallelism, it runs one worker per subtask again.
func (w *WorkerPools) Forget(uid string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.workers, uid)
}
