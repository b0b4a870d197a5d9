package bundle

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/udf/bridge"
)

// hangGuard bounds every wait in tests. It only turns a hang into a failure;
// no test asserts how long anything takes.
const hangGuard = 5 * time.Second

// callLog is the ordered record of calls shared by the fake runner, the
// recording executor and the emit collector.
type callLog struct {
	mu    sync.Mutex
	calls []string
}

func (l *callLog) add(call string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, call)
}

func (l *callLog) snapshot() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.calls)
}

func (l *callLog) index(call string) int { return slices.Index(l.snapshot(), call) }

func (l *callLog) lastIndex(call string) int {
	calls := l.snapshot()
	for i := len(calls) - 1; i >= 0; i-- {
		if calls[i] == call {
			return i
		}
	}
	return -1
}

func (l *callLog) count(call string) int {
	n := 0
	for _, c := range l.snapshot() {
		if c == call {
			n++
		}
	}
	return n
}

// recordingExecutor wraps an Executor and logs its shutdowns.
type recordingExecutor struct {
	Executor
	log *callLog
}

func (e recordingExecutor) Shutdown() {
	e.log.add("executor.Shutdown")
	e.Executor.Shutdown()
}

func (e recordingExecutor) ShutdownNow() {
	e.log.add("executor.ShutdownNow")
	e.Executor.ShutdownNow()
}

// fakeRunner is a fake of the bridge.Runner contract. Its results echo its
// input. It has no Cancel; cancelableRunner adds one. Knobs are set before
// the operator uses it.
type fakeRunner struct {
	log *callLog

	// holdUntilFlush queues results only when Flush runs, as a worker that
	// answers late; otherwise results are queued by Process.
	holdUntilFlush bool
	// blockFlush makes Flush wait for releaseFlush, or for Cancel or Close.
	blockFlush   bool
	releaseFlush chan struct{}
	flushErr     error
	// blockClose makes Close wait for releaseClose.
	blockClose   bool
	releaseClose chan struct{}
	closeErr     error

	flushStarted chan struct{} // one send per Flush
	closeStarted chan struct{} // one send per Close
	stopped      chan struct{} // closed by the first Cancel or Close
	stopOnce     sync.Once

	mu        sync.Mutex
	rows      []int64 // rows of every Process call
	held      []bridge.Result
	queue     []queued
	changed   chan struct{} // closed and replaced on every change of queue or failed
	failed    error
	closeDone bool // Close has returned
}

type queued struct {
	res  bridge.Result
	wake bool // NotifyNoMoreResults
}

func newFakeRunner(log *callLog) *fakeRunner {
	return &fakeRunner{
		log:          log,
		releaseFlush: make(chan struct{}),
		releaseClose: make(chan struct{}),
		flushStarted: make(chan struct{}, 64),
		closeStarted: make(chan struct{}, 64),
		stopped:      make(chan struct{}),
		changed:      make(chan struct{}),
	}
}

var _ bridge.Runner = (*fakeRunner)(nil)

func (f *fakeRunner) Open(context.Context) error {
	f.log.add("runner.Open")
	return nil
}

func (f *fakeRunner) Process(_ context.Context, seq int64, b arrow.RecordBatch) error {
	f.log.add("runner.Process")
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failed != nil {
		return f.failed
	}
	f.rows = append(f.rows, b.NumRows())
	b.Retain()
	res := bridge.Result{Seq: seq, Batch: b}
	if f.holdUntilFlush {
		f.held = append(f.held, res)
		return nil
	}
	f.queue = append(f.queue, queued{res: res})
	f.changedLocked()
	return nil
}

func (f *fakeRunner) Flush() error {
	f.log.add("runner.Flush")
	f.flushStarted <- struct{}{}
	if f.blockFlush {
		select {
		case <-f.releaseFlush:
		case <-f.stopped:
			return fmt.Errorf("fake flush: %w", bridge.ErrClosed)
		}
	}
	if f.flushErr != nil {
		return f.flushErr
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failed != nil {
		return f.failed
	}
	for _, r := range f.held {
		f.queue = append(f.queue, queued{res: r})
	}
	f.held = nil
	f.changedLocked()
	return nil
}

func (f *fakeRunner) TakeResult(ctx context.Context) (bridge.Result, error) {
	for {
		f.mu.Lock()
		if f.failed != nil {
			f.mu.Unlock()
			return bridge.Result{}, f.failed
		}
		if len(f.queue) > 0 {
			q := f.queue[0]
			f.queue = f.queue[1:]
			f.mu.Unlock()
			if q.wake {
				return bridge.Result{}, bridge.ErrNoMoreResults
			}
			return q.res, nil
		}
		changed := f.changed
		f.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return bridge.Result{}, ctx.Err()
		}
	}
}

func (f *fakeRunner) TryTakeResult() (bridge.Result, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failed != nil {
		return bridge.Result{}, false, f.failed
	}
	for len(f.queue) > 0 {
		q := f.queue[0]
		f.queue = f.queue[1:]
		if !q.wake { // a wake-up is for TakeResult only
			return q.res, true, nil
		}
	}
	return bridge.Result{}, false, nil
}

func (f *fakeRunner) NotifyNoMoreResults() {
	f.log.add("runner.NotifyNoMoreResults")
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failed != nil {
		return
	}
	f.queue = append(f.queue, queued{wake: true})
	f.changedLocked()
}

func (f *fakeRunner) Close() error {
	f.log.add("runner.Close")
	f.closeStarted <- struct{}{}
	f.stop(bridge.ErrClosed)
	if f.blockClose {
		<-f.releaseClose
	}
	f.mu.Lock()
	f.closeDone = true
	f.mu.Unlock()
	return f.closeErr
}

// stop fails every later call with err and frees the pending results.
func (f *fakeRunner) stop(err error) {
	f.stopOnce.Do(func() { close(f.stopped) })
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failed == nil {
		f.failed = err
	}
	for _, q := range f.queue {
		if !q.wake {
			q.res.Batch.Release()
		}
	}
	for _, r := range f.held {
		r.Batch.Release()
	}
	f.queue, f.held = nil, nil
	f.changedLocked()
}

func (f *fakeRunner) changedLocked() {
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *fakeRunner) processedRows() []int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.rows)
}

func (f *fakeRunner) closeReturned() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.closeDone
}

// cancelableRunner is a fakeRunner with bridge.Canceler.
type cancelableRunner struct{ *fakeRunner }

var _ bridge.Canceler = cancelableRunner{}

func (c cancelableRunner) Cancel() {
	c.log.add("runner.Cancel")
	c.stop(fmt.Errorf("fake runner canceled: %w", bridge.ErrClosed))
}

// collector is the emit callback: it logs and records every result.
type collector struct {
	log *callLog
	// failAt makes the emit of this result (counted from 1) return errEmit.
	failAt int

	mu     sync.Mutex
	seqs   []int64
	values []int64
}

var errEmit = fmt.Errorf("sink refused the result")

func (c *collector) emit(res bridge.Result) error {
	defer res.Batch.Release()
	c.log.add("emit")
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seqs = append(c.seqs, res.Seq)
	if c.failAt > 0 && len(c.seqs) == c.failAt {
		return errEmit
	}
	c.values = append(c.values, res.Batch.Column(0).(*array.Int64).Int64Values()...)
	return nil
}

func (c *collector) emitted() (seqs, values []int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.seqs), slices.Clone(c.values)
}

var testSchema = arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil)

// makeBatch returns a batch of one int64 column holding start, start+1, ...
func makeBatch(t testing.TB, mem memory.Allocator, start, n int64) arrow.RecordBatch {
	t.Helper()
	b := array.NewInt64Builder(mem)
	defer b.Release()
	for i := range n {
		b.Append(start + i)
	}
	col := b.NewArray()
	defer col.Release()
	return array.NewRecordBatch(testSchema, []arrow.Array{col}, n)
}

// values returns the int64 column of b.
func values(b arrow.RecordBatch) []int64 {
	return slices.Clone(b.Column(0).(*array.Int64).Int64Values())
}

// seq returns start, start+1, ..., start+n-1.
func seq(start, n int64) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = start + int64(i)
	}
	return out
}

// waitFor fails the test unless ch delivers within hangGuard.
func waitFor[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(hangGuard):
		t.Fatalf("hang: %s", what)
		panic("unreachable")
	}
}

// harness is an operator with a fake runner, a recording executor and a
// collector sharing one log.
type harness struct {
	op     *Operator
	runner *fakeRunner
	log    *callLog
	out    *collector
	mem    *memory.CheckedAllocator
}

// newHarness builds an operator; cancelable picks whether the runner has
// Cancel; tweak sets runner knobs before use.
func newHarness(t *testing.T, opts Options, cancelable bool, tweak func(*fakeRunner)) *harness {
	t.Helper()
	h := &harness{log: &callLog{}, mem: memory.NewCheckedAllocator(memory.NewGoAllocator())}
	h.runner = newFakeRunner(h.log)
	if tweak != nil {
		tweak(h.runner)
	}
	h.out = &collector{log: h.log}
	if opts.Name == "" {
		opts.Name = `udf "score" (operator 3, subtask 1)`
	}
	opts.Allocator = h.mem
	opts.Executor = recordingExecutor{Executor: NewFlushExecutor(), log: h.log}
	var runner bridge.Runner = h.runner
	if cancelable {
		runner = cancelableRunner{h.runner}
	}
	op, err := NewOperator(opts, runner, h.out.emit)
	if err != nil {
		t.Fatal(err)
	}
	h.op = op
	if err := op.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	return h
}

// process sends a batch of n rows starting at start.
func (h *harness) process(t *testing.T, start, n int64) error {
	t.Helper()
	b := makeBatch(t, h.mem, start, n)
	defer b.Release()
	return h.op.ProcessBatch(context.Background(), b)
}
