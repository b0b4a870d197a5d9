package metrics

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// A job's task set changes when it rescales: each task's rates come from
// its own readings, a task not sampled yet has none, and nothing indexes
// past the set the sampler began with.
//
// It runs in a synctest bubble: its sleeps move the bubble's clock, so the
// rates are exact and the test waits for nothing.
func TestSamplerFollowsAChangingTaskSet(t *testing.T) {
	synctest.Test(t, samplerFollowsAChangingTaskSet)
}

func samplerFollowsAChangingTaskSet(t *testing.T) {
	before := []*Task{NewTask(), NewTask()}
	var mu sync.Mutex
	current := before
	s := NewSampler(func() []*Task {
		mu.Lock()
		defer mu.Unlock()
		return current
	}, time.Hour)
	start := time.Now()
	// Rates need a millisecond between a reading and now.
	const tick = 2 * time.Millisecond

	before[0].RecordsIn.Add(100)
	time.Sleep(tick) // the bubble's clock
	if r := s.Rates(before[0]); r.RecordsInPerSecond != 100/tick.Seconds() {
		t.Errorf("a sampled task's rate: %+v", r)
	}
	if r := s.Rates(before[1]); r.RecordsInPerSecond != 0 {
		t.Errorf("an idle task's rate: %+v", r)
	}

	after := []*Task{NewTask(), NewTask(), NewTask()} // rescaled 2 -> 3
	for _, task := range after {
		task.RecordsIn.Add(1_000_000) // counted before the first reading: not a rate
	}
	mu.Lock()
	current = after
	mu.Unlock()
	if r := s.Rates(after[2]); r != (Rates{}) {
		t.Errorf("a task never sampled: %+v, want zero", r)
	}
	s.Sample(time.Now())
	after[2].RecordsIn.Add(10)
	time.Sleep(tick) // the bubble's clock
	r := s.Rates(after[2])
	// Its rate is its own 10 records over the time since it was first read,
	// never the million before it nor another task's.
	if elapsed := time.Since(start).Seconds(); r.RecordsInPerSecond != 10/tick.Seconds() {
		t.Errorf("a new task's rate %v records/s after %.3f s", r.RecordsInPerSecond, elapsed)
	}
	if r := s.Rates(before[0]); r.RecordsInPerSecond <= 0 {
		t.Errorf("a retired task keeps its rate over the window: %+v", r)
	}
}
