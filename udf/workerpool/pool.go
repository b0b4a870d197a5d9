package workerpool

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flinkgo/flinkgo/udf/bridge"
)

// Options configure a Pool.
type Options struct {
	// Name names the pool's operator subtask in errors and log records.
	Name string
	// Workers is how many members Open starts. Default 1.
	Workers int
	// New makes member number id (0, 1, ... in the order members are
	// made), not yet opened. Required.
	New func(id int) (bridge.Runner, error)
	// Logger receives a record per member that joins or retires; nil
	// discards them.
	Logger *slog.Logger
	// OnRetire, when set, is called once a member a shrink retired has
	// closed (the operator's metrics: a retired worker was not replaced).
	OnRetire func()
}

// Pool is a bridge.Runner and bridge.Canceler over a resizable set of
// member runners; see the package comment. Resize and Workers are safe from
// any goroutine; the other methods follow bridge.Runner.
type Pool struct {
	opts Options
	// life ends once Close or Cancel has dealt with every member: it stops
	// the collectors. starts ends when Close or Cancel begins: it aborts
	// members being opened for a resize.
	life, starts       context.Context
	endLife, endStarts context.CancelFunc
	bg                 sync.WaitGroup // collectors, starters, closers

	closeOnce, cancelOnce sync.Once
	closeErr              error

	mu struct {
		sync.Mutex
		target   int
		nextID   int
		starting int
		serving  []*member // the round robin
		joining  []*member // opened; serve from the next Process on
		retiring []*member // out of the round robin until flushed
		closing  []*member // being closed in the background
		next     int       // index in serving of the next batch's member
		// dispatched are the sequence numbers sent whose results have not
		// reached queue, in the order they were sent; ready holds results
		// that came before an earlier batch's.
		dispatched []int64
		ready      map[int64]bridge.Result
		queue      []queued
		err        error
		running    bool          // Open succeeded: resizes start and retire members
		closed     bool          // Close or Cancel began
		changed    chan struct{} // closed and replaced on every change
	}
}

// member is one runner of the pool. Its fields are guarded by Pool.mu.
type member struct {
	id        int
	runner    bridge.Runner
	sent      int64   // the member's own sequence numbers given so far
	answered  int64   // results collected from it
	seqs      []int64 // the pool's sequence numbers it was sent, unanswered
	unflushed bool    // sent a batch since its last Flush
	flushing  bool    // in a Flush now: not to be closed under it
	closing   bool    // being closed or canceled: its errors are its end's
	stop      context.CancelFunc
	collected chan struct{} // closed when its collector returned
}

type queued struct {
	res  bridge.Result
	wake bool // left by NotifyNoMoreResults
}

var (
	_ bridge.Runner   = (*Pool)(nil)
	_ bridge.Canceler = (*Pool)(nil)
)

// New returns a pool that opens opts.Workers members.
func New(opts Options) (*Pool, error) {
	if opts.Workers == 0 {
		opts.Workers = 1
	}
	if opts.Workers < 1 || opts.New == nil {
		return nil, fmt.Errorf("workerpool: %s: invalid pool: %d workers (want at least 1) and a member factory", opts.Name, opts.Workers)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	p := &Pool{opts: opts}
	p.life, p.endLife = context.WithCancel(context.Background())
	p.starts, p.endStarts = context.WithCancel(p.life)
	p.mu.target = opts.Workers
	p.mu.ready = map[int64]bridge.Result{}
	p.mu.changed = make(chan struct{})
	return p, nil
}

// Open makes and opens the first members in parallel; see bridge.Runner.
func (p *Pool) Open(ctx context.Context) error {
	p.mu.Lock()
	if err := p.usableLocked(); err != nil {
		p.mu.Unlock()
		return err
	}
	var members []*member
	for range p.mu.target {
		id := p.mu.nextID
		p.mu.nextID++
		r, err := p.opts.New(id)
		if err != nil {
			p.failLocked(err)
			p.mu.Unlock()
			return err
		}
		m := &member{id: id, runner: r}
		members = append(members, m)
		// Registered before they open, so that a Cancel now reaches them.
		p.mu.serving = append(p.mu.serving, m)
	}
	p.mu.Unlock()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(p.starts, cancel)
	defer stop()
	errs := make([]error, len(members))
	var wg sync.WaitGroup
	for i, m := range members {
		wg.Go(func() { errs[i] = m.runner.Open(ctx) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		p.fail(err)
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.usableLocked(); err != nil {
		return err
	}
	for _, m := range members {
		p.collectLocked(m)
	}
	p.mu.running = true
	p.resizeLocked() // to a size asked for while the first members opened
	return nil
}

// Process sends batch to the next serving member; see bridge.Runner. Members
// that became ready since the last call join the round robin first.
func (p *Pool) Process(ctx context.Context, seq int64, batch arrow.RecordBatch) error {
	p.mu.Lock()
	if err := p.usableLocked(); err != nil {
		p.mu.Unlock()
		return err
	}
	if len(p.mu.joining) > 0 {
		for _, m := range p.mu.joining {
			p.opts.Logger.Info("udf worker joined the pool", "pool", p.opts.Name, "worker", m.id, "workers", len(p.mu.serving)+1)
			p.mu.serving = append(p.mu.serving, m)
		}
		p.mu.joining = nil
	}
	p.mu.next %= len(p.mu.serving)
	m := p.mu.serving[p.mu.next]
	p.mu.next = (p.mu.next + 1) % len(p.mu.serving)
	local := m.sent
	m.sent++
	m.seqs = append(m.seqs, seq)
	m.unflushed = true
	p.mu.dispatched = append(p.mu.dispatched, seq)
	p.mu.Unlock()
	if err := m.runner.Process(ctx, local, batch); err != nil {
		p.fail(err)
		return err
	}
	return nil
}

// Flush flushes every member sent a batch since its last flush, waits until
// every result is in the pool's queue, then closes the retiring members that
// have nothing left in flight (in the background); see bridge.Runner.
func (p *Pool) Flush() error {
	p.mu.Lock()
	if err := p.usableLocked(); err != nil {
		p.mu.Unlock()
		return err
	}
	var flush []*member
	for _, m := range p.membersLocked() {
		if m.unflushed {
			m.unflushed, m.flushing = false, true
			flush = append(flush, m)
		}
	}
	last, sent := int64(0), len(p.mu.dispatched) > 0
	if sent {
		last = p.mu.dispatched[len(p.mu.dispatched)-1]
	}
	p.mu.Unlock()

	errs := make([]error, len(flush))
	var wg sync.WaitGroup
	for i, m := range flush {
		wg.Go(func() { errs[i] = m.runner.Flush() })
	}
	wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, m := range flush {
		m.flushing = false
	}
	if err := errors.Join(errs...); err != nil {
		p.failLocked(err)
		return p.mu.err
	}
	for {
		if err := p.usableLocked(); err != nil {
			return err
		}
		if !sent || len(p.mu.dispatched) == 0 || p.mu.dispatched[0] > last {
			break
		}
		changed := p.mu.changed
		p.mu.Unlock()
		<-changed
		p.mu.Lock()
	}
	kept := p.mu.retiring[:0]
	for _, m := range p.mu.retiring {
		if m.idle() {
			p.closeLocked(m)
		} else {
			kept = append(kept, m)
		}
	}
	p.mu.retiring = kept
	return nil
}

// TakeResult blocks for the next result in sequence order; see
// bridge.Runner.
func (p *Pool) TakeResult(ctx context.Context) (bridge.Result, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		if len(p.mu.queue) > 0 {
			q := p.mu.queue[0]
			p.mu.queue = p.mu.queue[1:]
			if q.wake {
				return bridge.Result{}, bridge.ErrNoMoreResults
			}
			return q.res, nil
		}
		if p.mu.err != nil {
			return bridge.Result{}, p.mu.err
		}
		changed := p.mu.changed
		p.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			p.mu.Lock()
			return bridge.Result{}, context.Cause(ctx)
		}
		p.mu.Lock()
	}
}

// TryTakeResult returns the next result if it is queued; wake-ups left by
// NotifyNoMoreResults are skipped, as package pluginrunner does.
func (p *Pool) TryTakeResult() (bridge.Result, bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.mu.queue) > 0 {
		q := p.mu.queue[0]
		p.mu.queue = p.mu.queue[1:]
		if !q.wake {
			return q.res, true, nil
		}
	}
	return bridge.Result{}, false, p.mu.err
}

// NotifyNoMoreResults leaves a wake-up behind the results queued now.
func (p *Pool) NotifyNoMoreResults() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mu.queue = append(p.mu.queue, queued{wake: true})
	p.changedLocked()
}

// Resize sets the number of members to n (at least 1): it starts members
// in the background, which join the round robin once open, or retires the
// newest ones; see the package comment. It does not block. It fails on a
// closed or failed pool.
func (p *Pool) Resize(n int) error {
	if n < 1 {
		return fmt.Errorf("workerpool: %s: cannot resize to %d workers: a pool keeps at least one", p.opts.Name, n)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.usableLocked(); err != nil {
		return err
	}
	p.mu.target = n
	if p.mu.running {
		p.resizeLocked()
	} // else Open starts the target, or resizes to it once its members are open
	return nil
}

// resizeLocked starts or retires members towards the target. p.mu is held
// and the pool running.
func (p *Pool) resizeLocked() {
	n := p.mu.target
	live := len(p.mu.serving) + len(p.mu.joining)
	for range n - live - p.mu.starting {
		p.startLocked()
	}
	for live > n && len(p.mu.joining) > 0 {
		m := p.mu.joining[len(p.mu.joining)-1]
		p.mu.joining = p.mu.joining[:len(p.mu.joining)-1]
		p.closeLocked(m)
		live--
	}
	for live > n {
		m := p.mu.serving[len(p.mu.serving)-1]
		p.mu.serving = p.mu.serving[:len(p.mu.serving)-1]
		p.opts.Logger.Info("udf worker retiring from the pool", "pool", p.opts.Name, "worker", m.id, "workers", len(p.mu.serving))
		if m.idle() {
			p.closeLocked(m)
		} else {
			p.retireLocked(m)
		}
		live--
	}
}

// retireLocked takes m, out of the round robin with batches in flight, to
// the retiring members and flushes it in the background, closing it once
// its results are all collected: it finishes its bundle without waiting for
// the operator's next full flush, which may be far off (a bundle that ends
// on size or time does not flush). A member in a Flush already is closed by
// that Flush. p.mu is held and the pool usable.
func (p *Pool) retireLocked(m *member) {
	p.mu.retiring = append(p.mu.retiring, m)
	if m.flushing {
		return
	}
	m.unflushed, m.flushing = false, true
	p.bg.Go(func() {
		err := m.runner.Flush()
		p.mu.Lock()
		defer p.mu.Unlock()
		m.flushing = false
		p.changedLocked()
		if err != nil {
			if !m.closing && !p.mu.closed {
				p.failLocked(fmt.Errorf("workerpool: %s: flushing retired worker %d: %w", p.opts.Name, m.id, err))
			}
			return
		}
		for !m.idle() && !m.closing && p.usableLocked() == nil {
			changed := p.mu.changed
			p.mu.Unlock()
			<-changed
			p.mu.Lock()
		}
		if m.closing || p.usableLocked() != nil || !slices.Contains(p.mu.retiring, m) {
			return // closed by a Flush, or the pool is ending
		}
		p.mu.retiring = slices.DeleteFunc(p.mu.retiring, func(r *member) bool { return r == m })
		p.closeLocked(m)
		p.changedLocked()
	})
}

// Workers is the number of members serving or ready to serve: what the
// pool runs at once a resize has taken effect (until Open succeeded, the
// size asked for).
func (p *Pool) Workers() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.mu.running {
		return p.mu.target
	}
	return len(p.mu.serving) + len(p.mu.joining)
}

// Settled reports whether the latest resize has taken full effect: every
// grown member has taken a batch and every retired one has been closed.
func (p *Pool) Settled() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.running && p.mu.starting == 0 && len(p.mu.joining) == 0 && len(p.mu.retiring) == 0 && len(p.mu.closing) == 0
}

// Close closes every member in order, in parallel, and waits for all of
// them and for the pool's goroutines; see bridge.Runner. After Cancel it
// only waits.
func (p *Pool) Close() error {
	p.closeOnce.Do(func() { p.closeErr = p.close() })
	return p.closeErr
}

func (p *Pool) close() error {
	p.mu.Lock()
	canceled := p.mu.closed
	p.mu.closed = true
	members := p.membersLocked()
	for _, m := range members {
		m.closing = true
	}
	p.changedLocked() // the lists stay: a Cancel during Close reaches them
	// A retiring member's own flush ends before its runner is closed (a
	// Cancel ends a flush stuck on a worker).
	for slices.ContainsFunc(members, func(m *member) bool { return m.flushing }) && !canceled && p.mu.err == nil {
		changed := p.mu.changed
		p.mu.Unlock()
		<-changed
		p.mu.Lock()
	}
	p.mu.Unlock()
	p.endStarts()
	if canceled {
		p.wait()
		return nil
	}
	errs := make([]error, len(members))
	var wg sync.WaitGroup
	for i, m := range members {
		wg.Go(func() { errs[i] = m.runner.Close() })
	}
	wg.Wait()
	p.wait()
	return errors.Join(errs...)
}

// Cancel cancels every member at once, in parallel, and waits for the
// pool's goroutines; see bridge.Canceler.
func (p *Pool) Cancel() {
	p.cancelOnce.Do(func() {
		p.mu.Lock()
		p.mu.closed = true
		p.failLocked(fmt.Errorf("workerpool: %s: %w", p.opts.Name, bridge.ErrClosed))
		members := append(p.membersLocked(), p.mu.closing...)
		for _, m := range members {
			m.closing = true
		}
		p.mu.Unlock()
		p.endStarts()
		var wg sync.WaitGroup
		for _, m := range members {
			wg.Go(func() { bridge.CancelRunner(m.runner) })
		}
		wg.Wait()
		p.wait()
	})
}

// wait stops the collectors once the members are closed or canceled, waits
// for every goroutine of the pool and frees the results nobody took.
func (p *Pool) wait() {
	p.endLife()
	p.bg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range p.mu.ready {
		r.Batch.Release()
	}
	clear(p.mu.ready)
	for _, q := range p.mu.queue {
		if q.res.Batch != nil {
			q.res.Batch.Release()
		}
	}
	p.mu.queue = nil
}

// startLocked makes and opens a member in the background; it joins once
// open, unless the pool shrank meanwhile. p.mu is held and the pool usable,
// so the goroutine is counted before any Close or Cancel waits.
func (p *Pool) startLocked() {
	id := p.mu.nextID
	p.mu.nextID++
	p.mu.starting++
	p.bg.Go(func() {
		r, err := p.opts.New(id)
		if err == nil {
			err = r.Open(p.starts)
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		p.mu.starting--
		if err != nil || p.mu.closed || p.mu.err != nil {
			if err != nil && !p.mu.closed {
				p.failLocked(fmt.Errorf("workerpool: %s: starting worker %d to grow the pool: %w", p.opts.Name, id, err))
			}
			if r != nil {
				p.bg.Go(func() { bridge.CancelRunner(r) })
			}
			return
		}
		m := &member{id: id, runner: r}
		p.collectLocked(m)
		if len(p.mu.serving)+len(p.mu.joining) >= p.mu.target {
			p.closeLocked(m) // the pool shrank while it started
			return
		}
		p.mu.joining = append(p.mu.joining, m)
		p.changedLocked()
	})
}

// collectLocked starts m's collector, which moves its results into the
// pool's reassembly until m is closed or fails. p.mu is held.
func (p *Pool) collectLocked(m *member) {
	ctx, stop := context.WithCancel(p.life)
	m.stop, m.collected = stop, make(chan struct{})
	p.bg.Go(func() {
		defer close(m.collected)
		for {
			res, err := m.runner.TakeResult(ctx)
			switch {
			case err == nil:
				p.deliver(m, res)
			case ctx.Err() != nil:
				return
			case errors.Is(err, bridge.ErrNoMoreResults):
				// The pool never leaves wake-ups with its members.
			default:
				p.mu.Lock()
				if !m.closing && !p.mu.closed {
					p.failLocked(err)
				}
				p.mu.Unlock()
				return
			}
		}
	})
}

// deliver files res, m's answer to its oldest unanswered batch, under the
// pool's sequence number and queues every result now next in order.
func (p *Pool) deliver(m *member, res bridge.Result) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(m.seqs) == 0 || res.Seq != m.answered {
		res.Batch.Release()
		p.failLocked(fmt.Errorf("workerpool: %s: worker %d returned the result of its batch %d while batch %d was next: %w",
			p.opts.Name, m.id, res.Seq, m.answered, bridge.ErrResultMismatch))
		return
	}
	seq := m.seqs[0]
	m.seqs = m.seqs[1:]
	m.answered++
	if p.mu.err != nil {
		res.Batch.Release()
		return
	}
	p.mu.ready[seq] = bridge.Result{Seq: seq, Batch: res.Batch}
	for len(p.mu.dispatched) > 0 {
		r, ok := p.mu.ready[p.mu.dispatched[0]]
		if !ok {
			break
		}
		delete(p.mu.ready, r.Seq)
		p.mu.dispatched = p.mu.dispatched[1:]
		p.mu.queue = append(p.mu.queue, queued{res: r})
	}
	p.changedLocked()
}

// closeLocked closes m in order in the background: it has nothing in
// flight. A failed close fails the pool. p.mu is held and the pool usable
// or closing.
func (p *Pool) closeLocked(m *member) {
	m.closing = true
	p.mu.closing = append(p.mu.closing, m)
	p.bg.Go(func() {
		err := m.runner.Close()
		m.stop()
		<-m.collected
		p.mu.Lock()
		defer p.mu.Unlock()
		for i, c := range p.mu.closing {
			if c == m {
				p.mu.closing = append(p.mu.closing[:i], p.mu.closing[i+1:]...)
				break
			}
		}
		if err != nil && !p.mu.closed {
			p.failLocked(fmt.Errorf("workerpool: %s: closing retired worker %d: %w", p.opts.Name, m.id, err))
		}
		if p.opts.OnRetire != nil {
			p.opts.OnRetire()
		}
		p.opts.Logger.Info("udf worker left the pool", "pool", p.opts.Name, "worker", m.id)
	})
}

// membersLocked lists the members that are open or opening, serving or not.
func (p *Pool) membersLocked() []*member {
	var out []*member
	out = append(out, p.mu.serving...)
	out = append(out, p.mu.joining...)
	return append(out, p.mu.retiring...)
}

func (p *Pool) usableLocked() error {
	if p.mu.err != nil {
		return p.mu.err
	}
	if p.mu.closed {
		return fmt.Errorf("workerpool: %s: %w", p.opts.Name, bridge.ErrClosed)
	}
	return nil
}

// fail records the pool's first failure and wakes every waiter.
func (p *Pool) fail(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failLocked(err)
}

func (p *Pool) failLocked(err error) {
	if p.mu.err == nil {
		p.mu.err = err
	}
	p.changedLocked()
}

func (p *Pool) changedLocked() {
	close(p.mu.changed)
	p.mu.changed = make(chan struct{})
}

// idle reports whether m has nothing in flight, unflushed or flushing, so
// it may be closed. Pool.mu is held.
func (m *member) idle() bool { return len(m.seqs) == 0 && !m.unflushed && !m.flushing }
