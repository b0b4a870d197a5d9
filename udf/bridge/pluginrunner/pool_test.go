package pluginrunner

import (
	"sync/atomic"
	"testing"
	"time"
)

// fakeProc is a pooled process that records its shutdown.
type fakeProc struct {
	exited   atomic.Bool
	shutdown chan struct{}
}

func newFakeProc() *fakeProc { return &fakeProc{shutdown: make(chan struct{})} }

func (f *fakeProc) Exited() bool { return f.exited.Load() }
func (f *fakeProc) Shutdown() {
	if f.exited.CompareAndSwap(false, true) {
		close(f.shutdown)
	}
}

func (f *fakeProc) isShutDown() bool {
	select {
	case <-f.shutdown:
		return true
	default:
		return false
	}
}

func TestPoolLendsAWorkerOnceAndOnlyForItsEnvironment(t *testing.T) {
	p := NewPool(nil)
	defer p.Close()
	a := newFakeProc()
	if !p.put("py-a", a, time.Hour, 4) {
		t.Fatal("put refused")
	}
	if got := p.take("py-b"); got != nil {
		t.Fatalf("a worker of another environment was lent: %v", got)
	}
	if got := p.take("py-a"); got != a {
		t.Fatalf("take = %v, want the idle worker", got)
	}
	// Taken: a second (concurrent) job gets none.
	if got := p.take("py-a"); got != nil {
		t.Fatalf("the same worker was lent twice: %v", got)
	}
	if a.isShutDown() {
		t.Fatal("a lent worker was stopped")
	}
}

func TestPoolRefusesWithoutTimeoutOrCapAndAfterClose(t *testing.T) {
	p := NewPool(nil)
	if p.put("k", newFakeProc(), 0, 4) {
		t.Error("kept a worker with idle timeout 0")
	}
	if p.put("k", newFakeProc(), time.Hour, 0) {
		t.Error("kept a worker with max idle 0")
	}
	idle := newFakeProc()
	p.put("k", idle, time.Hour, 4)
	p.Close()
	if !idle.isShutDown() {
		t.Error("Close left an idle worker running")
	}
	if p.put("k", newFakeProc(), time.Hour, 4) {
		t.Error("a closed pool kept a worker")
	}
}

func TestPoolStopsTheOldestBeyondTheCap(t *testing.T) {
	p := NewPool(nil)
	defer p.Close()
	procs := []*fakeProc{newFakeProc(), newFakeProc(), newFakeProc()}
	for _, w := range procs {
		p.put("k", w, time.Hour, 2)
	}
	if !procs[0].isShutDown() || procs[1].isShutDown() || procs[2].isShutDown() {
		t.Fatalf("stopped: %v %v %v, want only the oldest", procs[0].isShutDown(), procs[1].isShutDown(), procs[2].isShutDown())
	}
	if p.Idle() != 2 {
		t.Fatalf("Idle = %d, want 2", p.Idle())
	}
	// The most recently idle one is lent first (the warmest).
	if got := p.take("k"); got != procs[2] {
		t.Fatalf("take = %v, want the newest", got)
	}
}

func TestPoolStopsAWorkerIdleForItsTimeout(t *testing.T) {
	p := NewPool(nil)
	defer p.Close()
	w := newFakeProc()
	p.put("k", w, time.Millisecond, 4)
	<-w.shutdown // the timer stopped it
	if got := p.take("k"); got != nil {
		t.Fatalf("an expired worker was lent: %v", got)
	}
	if p.Idle() != 0 {
		t.Fatalf("Idle = %d after expiry", p.Idle())
	}
}

func TestPoolSkipsAWorkerThatDiedWhileIdle(t *testing.T) {
	p := NewPool(nil)
	defer p.Close()
	dead := newFakeProc()
	p.put("k", dead, time.Hour, 4)
	dead.exited.Store(true) // killed from outside
	if got := p.take("k"); got != nil {
		t.Fatalf("a dead worker was lent: %v", got)
	}
}
