package pluginrunner

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Pool keeps the workers of runners that closed cleanly, idle, so that a
// later runner of the same environment takes one instead of starting a
// process (Spark's spark.python.worker.reuse): the start of a worker
// (interpreter, imports, handshake) costs about a second, the Open of a
// warm one milliseconds.
//
// Rules (docs/semantics.md#worker-reuse):
//   - Only a worker whose runner closed in order (every batch answered, the
//     Close RPC without error, never failed nor canceled) goes back; any
//     other is stopped.
//   - A worker is taken out of the pool while a runner uses it, so two
//     runners (two jobs running at once) never share one.
//   - Workers match by environment: the interpreter, the extra environment
//     entries and the message limit, all fixed when the process starts.
//   - An idle worker is stopped after its idle timeout (the Options of the
//     runner that gave it back); beyond the cap the oldest idle worker is
//     stopped.
//   - The worker drops the previous chain's functions, the modules its code
//     imported and its changes to sys.path, the environment and the working
//     directory before the next Open (python/flinkgo/worker/namespace.py).
//
// The zero Pool is not usable: NewPool. Safe for concurrent use.
type Pool struct {
	log *slog.Logger
	mu  struct {
		sync.Mutex
		closed bool
		// idle is oldest first.
		idle []*idleWorker
	}
}

// pooledProcess is what the pool needs of a worker process.
type pooledProcess interface {
	Exited() bool
	Shutdown()
}

type idleWorker struct {
	key   string
	proc  pooledProcess
	timer *time.Timer
}

// NewPool returns an empty pool. log receives a debug record per worker
// kept, reused and stopped; nil discards them.
func NewPool(log *slog.Logger) *Pool {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Pool{log: log}
}

// envKey identifies the environment a worker was started in: what the
// process was given at its start and cannot change after.
func envKey(o Options) string {
	return strings.Join(append([]string{o.Python, strconv.Itoa(o.MaxMessageBytes)}, o.Env...), "\x00")
}

// take removes and returns the most recently idle live worker of key, or
// nil.
func (p *Pool) take(key string) pooledProcess {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := len(p.mu.idle) - 1; i >= 0; i-- {
		w := p.mu.idle[i]
		if w.key != key {
			continue
		}
		p.mu.idle = append(p.mu.idle[:i], p.mu.idle[i+1:]...)
		w.timer.Stop()
		if w.proc.Exited() {
			go w.proc.Shutdown() // reaped already: this only cleans up
			continue
		}
		return w.proc
	}
	return nil
}

// put keeps proc idle for idle, evicting the oldest idle workers beyond
// maxIdle. It reports false, keeping nothing, when the pool is closed or
// idle or maxIdle is not positive: the caller stops proc.
func (p *Pool) put(key string, proc pooledProcess, idle time.Duration, maxIdle int) bool {
	if idle <= 0 || maxIdle <= 0 {
		return false
	}
	p.mu.Lock()
	if p.mu.closed {
		p.mu.Unlock()
		return false
	}
	w := &idleWorker{key: key, proc: proc}
	w.timer = time.AfterFunc(idle, func() { p.expire(w) })
	p.mu.idle = append(p.mu.idle, w)
	var evicted []*idleWorker
	if n := len(p.mu.idle) - maxIdle; n > 0 {
		evicted = append(evicted, p.mu.idle[:n]...)
		p.mu.idle = append([]*idleWorker(nil), p.mu.idle[n:]...)
	}
	p.mu.Unlock()
	for _, e := range evicted {
		e.timer.Stop()
		p.log.Debug("idle worker stopped: over the cap of idle workers", "max_idle", maxIdle)
		e.proc.Shutdown()
	}
	return true
}

// expire stops w if it is still idle.
func (p *Pool) expire(w *idleWorker) {
	p.mu.Lock()
	i := -1
	for j, e := range p.mu.idle {
		if e == w {
			i = j
			break
		}
	}
	if i < 0 {
		p.mu.Unlock()
		return // taken or stopped meanwhile
	}
	p.mu.idle = append(p.mu.idle[:i], p.mu.idle[i+1:]...)
	p.mu.Unlock()
	p.log.Debug("idle worker stopped: idle timeout")
	w.proc.Shutdown()
}

// Idle is the number of idle workers.
func (p *Pool) Idle() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.mu.idle)
}

// Close stops every idle worker and keeps none from now on. Workers in use
// are stopped by their runners' Close or Cancel. Safe to call twice.
func (p *Pool) Close() {
	p.mu.Lock()
	p.mu.closed = true
	idle := p.mu.idle
	p.mu.idle = nil
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, w := range idle {
		w.timer.Stop()
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.proc.Shutdown()
		}()
	}
	wg.Wait()
}

// swapHandler is a slog.Handler whose destination changes: a worker's
// go-plugin logger is made once, at its start, but each runner that uses
// the worker tags its records (job, UDF, operator, subtask).
type swapHandler struct {
	cur   *atomic.Pointer[slog.Logger]
	attrs []slog.Attr
	group string
}

func newSwapLogger(l *slog.Logger) (*slog.Logger, *atomic.Pointer[slog.Logger]) {
	cur := new(atomic.Pointer[slog.Logger])
	cur.Store(l)
	return slog.New(&swapHandler{cur: cur}), cur
}

func (h *swapHandler) inner() slog.Handler {
	in := h.cur.Load().Handler()
	if len(h.attrs) > 0 {
		in = in.WithAttrs(h.attrs)
	}
	if h.group != "" {
		in = in.WithGroup(h.group)
	}
	return in
}

func (h *swapHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.cur.Load().Handler().Enabled(ctx, l)
}

func (h *swapHandler) Handle(ctx context.Context, r slog.Record) error {
	return h.inner().Handle(ctx, r)
}

func (h *swapHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if h.group != "" {
		// Attributes after a group belong to it: from here on the
		// handler no longer follows the swap (nothing here does this).
		return h.inner().WithAttrs(attrs)
	}
	c := *h
	c.attrs = append(append([]slog.Attr(nil), h.attrs...), attrs...)
	return &c
}

func (h *swapHandler) WithGroup(name string) slog.Handler {
	if h.group != "" {
		return h.inner().WithGroup(name)
	}
	c := *h
	c.group = name
	return &c
}

// reset forgets the lines of an earlier runner of the same worker.
func (t *lineTail) reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lines = nil
	t.split.buf, t.split.dropped = t.split.buf[:0], 0
}
