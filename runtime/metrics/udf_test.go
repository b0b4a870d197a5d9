package metrics

import (
	"os"
	"runtime"
	"testing"
	"time"
)

// The counts of a subtask with two workers per attempt over two attempts:
// restarts are the workers the second attempt replaced; the memory is the
// workers' summed, sampled from /proc, and stays after they went.
func TestUDFCountsWorkersAcrossAttempts(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	u := NewUDF()
	self := os.Getpid()
	own, err := ProcessRSS(self)
	if err != nil || own <= 0 {
		t.Fatalf("ProcessRSS(self) = %d, %v", own, err)
	}
	// Two workers of the first attempt: this process twice over (pid 1
	// is not ours to read on every system, so the test stands in).
	u.WorkerOpened(self)
	u.WorkerOpened(-1) // /proc does not know it: counts no memory
	u.AddBatch(100)
	u.AddBatch(50)
	u.AddAnswered(30 * time.Millisecond)
	u.AddAnswered(10 * time.Millisecond)
	u.WorkerGone(-1)
	u.WorkerGone(self)
	if rss := u.RSS(); rss < own/2 {
		t.Errorf("RSS after the workers went = %d, want the last sample (about %d)", rss, own)
	}
	if r := u.Restarts(); r != 0 {
		t.Errorf("restarts after the first attempt = %d", r)
	}
	u.WorkerOpened(self) // the second attempt
	u.WorkerOpened(-2)
	u.WorkerGone(9999999) // not ours: ignored
	v := u.Values()
	want := map[string]float64{
		UDFNumBatches: 2, UDFNumRecords: 150, UDFAccumulatedWorkerTime: 40, UDFWorkerTimeMsPerBatch: 20,
		UDFBatchesInFlight: 0, UDFNumWorkerRestarts: 2,
	}
	for n, x := range want {
		if v[n] != x {
			t.Errorf("%s = %v, want %v", n, v[n], x)
		}
	}
	if v[UDFWorkerRssBytes] <= 0 {
		t.Errorf("%s = %v with a live worker", UDFWorkerRssBytes, v[UDFWorkerRssBytes])
	}
	if len(v) != len(UDFMetricNames) {
		t.Errorf("Values has %d metrics, UDFMetricNames %d", len(v), len(UDFMetricNames))
	}
}

func TestUDFsMadeOnFirstUse(t *testing.T) {
	s := NewUDFs()
	if s.Of(3) != nil {
		t.Fatal("an operator that never asked has metrics")
	}
	u := s.For(3, 1, 2)
	if s.For(3, 1, 2) != u {
		t.Error("For gave another subtask's metrics twice")
	}
	subs := s.Of(3)
	if len(subs) != 2 || subs[1] != u || subs[0] == nil {
		t.Errorf("Of(3) = %v", subs)
	}
}

// Workers an in-place rescale retired and grew again replace no worker:
// only the workers a restart opens again count as restarts.
func TestUDFRetiredWorkersAreNoRestarts(t *testing.T) {
	u := NewUDF()
	u.WorkerOpened(-1) // 1 worker, grown to 3
	u.WorkerOpened(-2)
	u.WorkerOpened(-3)
	for _, pid := range []int{-2, -3} { // shrunk to 1
		u.WorkerGone(pid)
		u.WorkerRetired()
	}
	u.WorkerOpened(-4) // grown to 2 again
	if r := u.Restarts(); r != 0 {
		t.Fatalf("restarts after 1 -> 3 -> 1 -> 2 workers = %d, want 0", r)
	}
	u.WorkerGone(-1) // a restart replaces both
	u.WorkerGone(-4)
	u.WorkerOpened(-5)
	u.WorkerOpened(-6)
	if r := u.Restarts(); r != 2 {
		t.Fatalf("restarts after a restart of 2 workers = %d, want 2", r)
	}
}
