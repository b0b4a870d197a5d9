package operator

import (
	"errors"
	"testing"
)

// fakePool records the sizes it is given.
type fakePool struct {
	n       int
	settled bool
	err     error
}

func (f *fakePool) Resize(n int) error {
	if f.err != nil {
		return f.err
	}
	f.n = n
	return nil
}
func (f *fakePool) Workers() int  { return f.n }
func (f *fakePool) Settled() bool { return f.settled }

// The workers of an operator spread over its subtasks, the first ones
// taking one more; a record outlives the pools and sizes the next ones;
// fewer workers than subtasks are refused.
func TestWorkerPoolsSpreadAndRemember(t *testing.T) {
	w := NewWorkerPools()
	if got := w.Start("u", 0, 2); got != 1 {
		t.Fatalf("Start without a record = %d, want 1", got)
	}
	a, b := &fakePool{n: 1, settled: true}, &fakePool{n: 1, settled: true}
	unA := w.Register("u", 0, a)
	unB := w.Register("u", 1, b)
	if err := w.Resize("u", 2, 5); err != nil {
		t.Fatal(err)
	}
	if a.n != 3 || b.n != 2 {
		t.Fatalf("5 workers over 2 subtasks: %d and %d, want 3 and 2", a.n, b.n)
	}
	if got := w.Workers("u", 2); got != 5 {
		t.Fatalf("Workers = %d, want 5", got)
	}
	if !w.Settled("u", 5) || w.Settled("u", 4) {
		t.Fatal("Settled does not follow the pools")
	}
	b.settled = false
	if w.Settled("u", 5) {
		t.Fatal("Settled with a pool still resizing")
	}
	unA()
	unB()
	if got, want := w.Start("u", 0, 2), 3; got != want {
		t.Fatalf("the next attempt's subtask 0 starts %d workers, want %d", got, want)
	}
	if got := w.Workers("u", 2); got != 5 {
		t.Fatalf("Workers from the record = %d, want 5", got)
	}
	if err := w.Resize("u", 2, 1); err == nil {
		t.Fatal("1 worker for 2 subtasks accepted")
	}
	w.Forget("u")
	if got := w.Start("u", 1, 2); got != 1 {
		t.Fatalf("Start after Forget = %d, want 1", got)
	}
	boom := errors.New("closed")
	defer w.Register("u", 0, &fakePool{err: boom})()
	if err := w.Resize("u", 1, 2); !errors.Is(err, boom) {
		t.Fatalf("Resize over a failing pool: %v", err)
	}
	var none *WorkerPools
	if none.Start("u", 0, 1) != 1 || none.Workers("u", 3) != 3 {
		t.Fatal("a nil *WorkerPools is not one worker per subtask")
	}
	none.Register("u", 0, a)()
}
