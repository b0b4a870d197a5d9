package bundle

import (
	"context"
	"runtime/pprof"
	"sync"
)

// Executor runs bundle flushes off the task goroutine, one at a time, in
// submission order (Flink's flushExecutor). The operator owns its executor and
// shuts it down; tests wrap it to record the order of calls.
type Executor interface {
	// Submit queues task. It does not block. It returns ErrExecutorShutdown
	// after Shutdown or ShutdownNow. Safe from any goroutine.
	Submit(task func()) error
	// Shutdown refuses new tasks and blocks until the queued and running
	// ones have finished. Idempotent: a later call waits the same way. After
	// ShutdownNow it returns at once.
	Shutdown()
	// ShutdownNow refuses new tasks, drops the queued ones and returns at
	// once, without waiting for the running one, which keeps running until
	// it returns by itself (a canceled runner makes it return). Idempotent.
	ShutdownNow()
	// Done is closed once Shutdown or ShutdownNow was called, so a waiter
	// for a task's outcome can stop waiting.
	Done() <-chan struct{}
}

// flushGoroutine names the executor's goroutine in pprof labels and errors.
const flushGoroutine = "bundle-flush"

// FlushExecutor is the default Executor: one dedicated goroutine, labeled
// goroutine=bundle-flush in pprof, started by the first Submit and ended by
// Shutdown or ShutdownNow once its running task returns. Use
// NewFlushExecutor; the zero value is not usable.
type FlushExecutor struct {
	done   chan struct{} // closed by the first Shutdown or ShutdownNow
	exited chan struct{} // closed when the goroutine returns
	cond   *sync.Cond    // on mu: queue grew or shutdown began

	mu struct {
		sync.Mutex
		queue    []func()
		started  bool
		shutdown bool
		now      bool // ShutdownNow: nobody waits for the running task
	}
}

var _ Executor = (*FlushExecutor)(nil)

// NewFlushExecutor returns an executor whose goroutine starts with the first
// Submit, so an operator that never flushes costs no goroutine.
func NewFlushExecutor() *FlushExecutor {
	e := &FlushExecutor{done: make(chan struct{}), exited: make(chan struct{})}
	e.cond = sync.NewCond(&e.mu)
	return e
}

// Submit implements Executor.
func (e *FlushExecutor) Submit(task func()) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.mu.shutdown {
		return ErrExecutorShutdown
	}
	e.mu.queue = append(e.mu.queue, task)
	if !e.mu.started {
		e.mu.started = true
		go e.run()
	}
	e.cond.Signal()
	return nil
}

// Shutdown implements Executor.
func (e *FlushExecutor) Shutdown() {
	e.mu.Lock()
	e.shutdownLocked()
	wait := e.mu.started && !e.mu.now
	e.mu.Unlock()
	if wait {
		<-e.exited
	}
}

// ShutdownNow implements Executor.
func (e *FlushExecutor) ShutdownNow() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.shutdownLocked()
	e.mu.now = true
	clear(e.mu.queue) // let the dropped tasks' captures be collected
	e.mu.queue = nil
}

// Done implements Executor.
func (e *FlushExecutor) Done() <-chan struct{} { return e.done }

func (e *FlushExecutor) shutdownLocked() {
	if e.mu.shutdown {
		return
	}
	e.mu.shutdown = true
	close(e.done)
	e.cond.Broadcast()
}

// run is the bundle-flush goroutine. It returns when shut down with an empty
// queue, so it never outlives the task running at ShutdownNow.
func (e *FlushExecutor) run() {
	defer close(e.exited)
	pprof.Do(context.Background(), pprof.Labels("goroutine", flushGoroutine), func(context.Context) {
		for {
			task, ok := e.next()
			if !ok {
				return
			}
			task()
		}
	})
}

// next blocks until a task is queued (ok) or the executor is shut down with
// nothing left to run.
func (e *FlushExecutor) next() (task func(), ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for len(e.mu.queue) == 0 && !e.mu.shutdown {
		e.cond.Wait()
	}
	if len(e.mu.queue) == 0 {
		return nil, false
	}
	task = e.mu.queue[0]
	e.mu.queue[0] = nil
	e.mu.queue = e.mu.queue[1:]
	return task, true
}
