package workerpool_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"go.uber.org/goleak"

	"github.com/flinkgo/flinkgo/internal/poll"
	"github.com/flinkgo/flinkgo/udf/bridge"
	"github.com/flinkgo/flinkgo/udf/bridge/bridgetest"
	"github.com/flinkgo/flinkgo/udf/workerpool"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var schema = arrow.NewSchema([]arrow.Field{{Name: "seq", Type: arrow.PrimitiveTypes.Int64}}, nil)

// fakes makes the pool's members: fake runners, each remembered in the
// order made, with setup applied before the pool uses it.
type fakes struct {
	mu      sync.Mutex
	runners []*bridgetest.Runner
	setup   func(id int, r *bridgetest.Runner)
}

func (f *fakes) new(id int) (bridge.Runner, error) {
	r := bridgetest.NewRunner(nil)
	if f.setup != nil {
		f.setup(id, r)
	}
	f.mu.Lock()
	f.runners = append(f.runners, r)
	f.mu.Unlock()
	return bridgetest.Cancelable{Runner: r}, nil
}

func (f *fakes) get(id int) *bridgetest.Runner {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.runners[id]
}

// batch is a one-row batch holding seq, so a result names its batch.
func batch(mem memory.Allocator, seq int64) arrow.RecordBatch {
	b := array.NewInt64Builder(mem)
	defer b.Release()
	b.Append(seq)
	col := b.NewArray()
	defer col.Release()
	return array.NewRecordBatch(schema, []arrow.Array{col}, 1)
}

// driver drives a pool as package bundle's operator does: Process, taking
// what is ready; Flush on another goroutine while draining TakeResult.
type driver struct {
	t    *testing.T
	mem  memory.Allocator
	pool *workerpool.Pool
	next int64
	got  []int64 // the seq column of every result, in the order taken
}

func (d *driver) process(n int) {
	d.t.Helper()
	for range n {
		b := batch(d.mem, d.next)
		err := d.pool.Process(context.Background(), d.next, b)
		b.Release()
		if err != nil {
			d.t.Fatalf("Process(%d): %v", d.next, err)
		}
		d.next++
		for {
			res, ok, err := d.pool.TryTakeResult()
			if err != nil {
				d.t.Fatalf("TryTakeResult: %v", err)
			}
			if !ok {
				break
			}
			d.take(res)
		}
	}
}

func (d *driver) take(res bridge.Result) {
	d.t.Helper()
	defer res.Batch.Release()
	v := res.Batch.Column(0).(*array.Int64).Value(0)
	if v != res.Seq {
		d.t.Fatalf("result tagged %d holds the answer to batch %d", res.Seq, v)
	}
	d.got = append(d.got, v)
}

// flush ends the bundle: Flush on its own goroutine, TakeResult here until
// the wake-up the flush leaves.
func (d *driver) flush() {
	d.t.Helper()
	flushed := make(chan error, 1)
	go func() {
		err := d.pool.Flush()
		d.pool.NotifyNoMoreResults()
		flushed <- err
	}()
	for {
		res, err := d.pool.TakeResult(context.Background())
		if errors.Is(err, bridge.ErrNoMoreResults) {
			break
		}
		if err != nil {
			d.t.Fatalf("TakeResult: %v", err)
		}
		d.take(res)
	}
	if err := <-flushed; err != nil {
		d.t.Fatalf("Flush: %v", err)
	}
}

// checkInOrder checks every batch sent came back once, in order.
func (d *driver) checkInOrder() {
	d.t.Helper()
	if int64(len(d.got)) != d.next {
		d.t.Fatalf("got %d results for %d batches", len(d.got), d.next)
	}
	for i, v := range d.got {
		if v != int64(i) {
			d.t.Fatalf("result %d is the answer to batch %d: results out of order or lost: %v", i, v, d.got)
		}
	}
}

func newPool(t *testing.T, workers int, f *fakes) (*driver, memory.Allocator) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	p, err := workerpool.New(workerpool.Options{Name: "test", Workers: workers, New: f.new})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	return &driver{t: t, mem: mem, pool: p}, mem
}

// waitFor polls cond until it holds; it fails the test after a minute
// (a hang, not a slow machine).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	poll.Until(t, time.Minute, what, cond)
}

// A member that answers only at Flush holds back the later answers of the
// others: results leave in the order their batches came in.
func TestPoolReassemblesResultsInOrder(t *testing.T) {
	f := &fakes{setup: func(id int, r *bridgetest.Runner) { r.HoldUntilFlush = id == 0 }}
	d, _ := newPool(t, 3, f)
	d.process(10)
	if len(d.got) != 0 {
		t.Fatalf("results %v left before the answer to batch 0, which worker 0 holds until the flush", d.got)
	}
	d.flush()
	d.process(20)
	d.flush()
	d.checkInOrder()
	for id := range 3 {
		if n := len(f.get(id).ProcessedRows()); n != 10 {
			t.Errorf("worker %d got %d batches, want 10 (round robin over 3)", id, n)
		}
	}
	if err := d.pool.Close(); err != nil {
		t.Fatal(err)
	}
}

// Grown from 1 to 3 between batches, the new members join the round robin
// once open and nothing is lost or reordered; shrunk to 1, the retiring
// members get no more batches and are closed after the next flush.
func TestPoolResize(t *testing.T) {
	f := &fakes{setup: func(_ int, r *bridgetest.Runner) { r.HoldUntilFlush = true }}
	d, _ := newPool(t, 1, f)
	d.process(5)
	if err := d.pool.Resize(3); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the grown members to open", func() bool { return d.pool.Workers() == 3 })
	d.process(30)
	if !d.pool.Settled() {
		t.Fatal("the grown pool is not settled after its members took batches")
	}
	d.flush()
	for id := range 3 {
		if len(f.get(id).ProcessedRows()) == 0 {
			t.Errorf("worker %d got no batch after the pool grew to 3", id)
		}
	}
	before := []int{len(f.get(1).ProcessedRows()), len(f.get(2).ProcessedRows())}

	// Shrink with batches in flight at the retiring members: they finish
	// them at the next flush and are closed only then.
	d.process(2)
	if err := d.pool.Resize(1); err != nil {
		t.Fatal(err)
	}
	if w := d.pool.Workers(); w != 1 {
		t.Fatalf("Workers() = %d after Resize(1)", w)
	}
	d.process(10)
	d.flush()
	d.checkInOrder()
	if n := len(f.get(1).ProcessedRows()); n > before[0]+1 {
		t.Errorf("worker 1 got %d batches after it retired", n-before[0]-1)
	}
	if n := len(f.get(2).ProcessedRows()); n > before[1]+1 {
		t.Errorf("worker 2 got %d batches after it retired", n-before[1]-1)
	}
	waitFor(t, "the retired members to close", func() bool { return f.get(1).CloseReturned() && f.get(2).CloseReturned() })
	waitFor(t, "the shrunk pool to settle", d.pool.Settled)
	if f.get(0).CloseReturned() {
		t.Fatal("the remaining member was closed")
	}
	if err := d.pool.Close(); err != nil {
		t.Fatal(err)
	}
	if !f.get(0).CloseReturned() {
		t.Fatal("Close did not close the remaining member")
	}
}

// A resize before Open (a rescale that comes while the subtask is being
// built) only sets how many members Open starts.
func TestPoolResizeBeforeOpen(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	f := &fakes{}
	p, err := workerpool.New(workerpool.Options{Name: "test", New: f.new})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Resize(3); err != nil {
		t.Fatal(err)
	}
	if p.Workers() != 3 || p.Settled() {
		t.Fatalf("before Open: Workers %d, Settled %v; want 3 and false", p.Workers(), p.Settled())
	}
	if err := p.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	d := &driver{t: t, mem: mem, pool: p}
	d.process(9)
	d.flush()
	d.checkInOrder()
	if n := len(f.runners); n != 3 {
		t.Fatalf("%d members made, want 3", n)
	}
	if !p.Settled() {
		t.Fatal("not settled after Open")
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}

// slowOpen is a member whose Open waits for release, as a worker that
// takes its time to start.
type slowOpen struct {
	bridgetest.Cancelable
	started chan<- struct{}
	release <-chan struct{}
}

func (s slowOpen) Open(ctx context.Context) error {
	s.started <- struct{}{}
	select {
	case <-s.release:
		return s.Cancelable.Open(ctx)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// A resize while the first members open applies once they are open: the
// surplus ones are closed then, never under their Open.
func TestPoolResizeWhileOpening(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	started, release := make(chan struct{}, 3), make(chan struct{})
	f := &fakes{}
	p, err := workerpool.New(workerpool.Options{Name: "test", Workers: 3, New: func(id int) (bridge.Runner, error) {
		r, err := f.new(id)
		return slowOpen{Cancelable: r.(bridgetest.Cancelable), started: started, release: release}, err
	}})
	if err != nil {
		t.Fatal(err)
	}
	opened := make(chan error, 1)
	go func() { opened <- p.Open(context.Background()) }()
	for range 3 {
		<-started
	}
	if err := p.Resize(1); err != nil {
		t.Fatal(err)
	}
	for id := range 3 {
		if f.get(id).Log().Count("runner.Close") != 0 {
			t.Fatalf("worker %d closed during its Open", id)
		}
	}
	close(release)
	if err := <-opened; err != nil {
		t.Fatal(err)
	}
	if w := p.Workers(); w != 1 {
		t.Fatalf("Workers = %d after Open, want the 1 asked for meanwhile", w)
	}
	waitFor(t, "the surplus members to close", func() bool { return f.get(1).CloseReturned() && f.get(2).CloseReturned() })
	d := &driver{t: t, mem: mem, pool: p}
	d.process(5)
	d.flush()
	d.checkInOrder()
	if n := len(f.get(0).ProcessedRows()); n != 5 {
		t.Fatalf("the remaining member got %d batches, want 5", n)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}

// Shrinking while grown members are still opening closes the surplus ones
// as they open; no member outlives Close.
func TestPoolResizeWhileStarting(t *testing.T) {
	f := &fakes{}
	d, _ := newPool(t, 1, f)
	for _, n := range []int{4, 2, 5, 1, 3} {
		if err := d.pool.Resize(n); err != nil {
			t.Fatal(err)
		}
		d.process(7)
	}
	d.flush()
	waitFor(t, "the pool to settle at 3", func() bool { return d.pool.Workers() == 3 })
	d.process(9)
	d.flush()
	d.checkInOrder()
	if err := d.pool.Close(); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for id, r := range f.runners {
		if !r.CloseReturned() && r.Log().Index("runner.Cancel") < 0 {
			t.Errorf("member %d was neither closed nor canceled", id)
		}
	}
}

// A member retired while its flush is still running is closed only after
// that flush: the flush never meets a closed worker.
func TestPoolRetiresAMemberOnlyAfterItsFlush(t *testing.T) {
	f := &fakes{setup: func(id int, r *bridgetest.Runner) { r.BlockFlush = id == 1 }}
	d, _ := newPool(t, 2, f)
	d.process(4) // the fakes answer at once: nothing in flight, both unflushed
	flushed := make(chan error, 1)
	go func() { flushed <- d.pool.Flush() }()
	<-f.get(1).FlushStarted()
	if err := d.pool.Resize(1); err != nil {
		t.Fatal(err)
	}
	if f.get(1).CloseReturned() {
		t.Fatal("worker 1 was closed during its flush")
	}
	f.get(1).ReleaseFlush()
	if err := <-flushed; err != nil {
		t.Fatalf("Flush: %v", err)
	}
	waitFor(t, "worker 1 to close after its flush", f.get(1).CloseReturned)
	for {
		res, ok, err := d.pool.TryTakeResult()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		d.take(res)
	}
	d.checkInOrder()
	if err := d.pool.Close(); err != nil {
		t.Fatal(err)
	}
}

// A shrink settles without a Flush of the pool: a retiring member holding
// answers until its flush is flushed by the pool itself, its answers come
// out in order, and it closes, while the member that stays keeps serving
// (a bundle that ends on size or time makes no Flush, and a stream without
// checkpoints may not make one for a long time).
func TestPoolRetiringMemberFlushesItself(t *testing.T) {
	f := &fakes{setup: func(id int, r *bridgetest.Runner) { r.HoldUntilFlush = id == 1 }}
	d, _ := newPool(t, 2, f)
	d.process(4) // worker 1 holds the answers to batches 1 and 3
	if err := d.pool.Resize(1); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the shrink to settle without a Flush of the pool", d.pool.Settled)
	if !f.get(1).CloseReturned() || !slices.Contains(f.get(1).Log().Snapshot(), "runner.Flush") {
		t.Fatalf("retired worker 1: calls %v, closed %v; want flushed and closed", f.get(1).Log().Snapshot(), f.get(1).CloseReturned())
	}
	d.process(2) // worker 0 alone
	for int64(len(d.got)) < d.next {
		res, err := d.pool.TakeResult(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		d.take(res)
	}
	d.checkInOrder()
	if err := d.pool.Close(); err != nil {
		t.Fatal(err)
	}
}

// A member's failure fails the pool: the drain gets the member's error.
func TestPoolMemberFailureFailsPool(t *testing.T) {
	f := &fakes{setup: func(_ int, r *bridgetest.Runner) { r.HoldUntilFlush = true }}
	d, _ := newPool(t, 2, f)
	d.process(4)
	boom := errors.New("worker 1 crashed")
	f.get(1).Fail(boom)
	_, err := d.pool.TakeResult(context.Background())
	if !errors.Is(err, boom) {
		t.Fatalf("TakeResult after a member failed: %v, want %v", err, boom)
	}
	b := batch(d.mem, 99)
	defer b.Release()
	if err := d.pool.Process(context.Background(), 99, b); !errors.Is(err, boom) {
		t.Fatalf("Process on a failed pool: %v, want %v", err, boom)
	}
	d.pool.Cancel()
}

// Cancel reaches every member stuck in Close, a retiring one included.
func TestPoolCancelDoesNotWaitForStuckMembers(t *testing.T) {
	f := &fakes{setup: func(_ int, r *bridgetest.Runner) { r.BlockClose = true }}
	d, _ := newPool(t, 3, f)
	d.process(6)
	d.flush()
	if err := d.pool.Resize(2); err != nil {
		t.Fatal(err)
	}
	d.process(1)
	d.flush() // worker 2 retires: its Close blocks
	<-f.get(2).CloseStarted()
	closed := make(chan error, 1)
	go func() { closed <- d.pool.Close() }()
	<-f.get(0).CloseStarted()
	// A real runner's Cancel ends its Close; the fake's needs a release.
	go func() {
		for id := range 3 {
			// Off the test's goroutine: a Cancel that never comes shows as
			// the Close below never returning.
			poll.Within(time.Minute, func() bool { return f.get(id).Log().Index("runner.Cancel") >= 0 })
		}
		for id := range 3 {
			f.get(id).ReleaseClose()
		}
	}()
	d.pool.Cancel() // reaches every member although every Close blocks
	if err := <-closed; err != nil {
		t.Fatalf("Close cut short by Cancel: %v", err)
	}
	if _, err := d.pool.TakeResult(context.Background()); !errors.Is(err, bridge.ErrClosed) {
		t.Fatalf("TakeResult after Cancel: %v, want ErrClosed", err)
	}
}

// Cancel wakes a Flush stuck on one member: the flush fails, nothing
// waits on the stuck worker.
func TestPoolCancelEndsAStuckFlush(t *testing.T) {
	f := &fakes{setup: func(id int, r *bridgetest.Runner) { r.BlockFlush = id == 1 }}
	d, _ := newPool(t, 2, f)
	d.process(4)
	flushed := make(chan error, 1)
	go func() { flushed <- d.pool.Flush() }()
	<-f.get(1).FlushStarted()
	d.pool.Cancel()
	if err := <-flushed; err == nil {
		t.Fatal("a flush cut short by Cancel returned no error")
	}
	for id := range 2 {
		if f.get(id).Log().Count("runner.Cancel") != 1 || f.get(id).Log().Count("runner.Close") != 0 {
			t.Errorf("worker %d: calls %v, want one Cancel and no Close", id, f.get(id).Log().Snapshot())
		}
	}
}

func TestPoolRefusesBadSizes(t *testing.T) {
	if _, err := workerpool.New(workerpool.Options{Name: "x", Workers: -1, New: (&fakes{}).new}); err == nil {
		t.Fatal("New accepted -1 workers")
	}
	f := &fakes{}
	d, _ := newPool(t, 1, f)
	if err := d.pool.Resize(0); err == nil {
		t.Fatal("Resize(0) accepted")
	}
	if err := d.pool.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.pool.Resize(2); !errors.Is(err, bridge.ErrClosed) {
		t.Fatalf("Resize after Close: %v, want ErrClosed", err)
	}
}
