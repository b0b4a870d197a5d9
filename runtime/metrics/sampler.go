package metrics

import (
	"sync"
	"time"
)

// Rates are a task's per-second figures over a Sampler's window.
type Rates struct {
	RecordsInPerSecond, RecordsOutPerSecond float64
	BytesInPerSecond, BytesOutPerSecond     float64
	// Milliseconds per second, each between 0 and 1000.
	BusyTimeMsPerSecond, IdleTimeMsPerSecond, BackPressuredTimeMsPerSecond float64
}

// Sampler reads a job's tasks once per tick and keeps the readings of its
// window, to give each task's rates between the oldest reading of it in the
// window and now (Flink's MeterView). The set of tasks may change between
// ticks (a rescaled job runs new ones): readings are kept per task, so a
// task's rates never mix with another's.
type Sampler struct {
	tasks  func() []*Task
	window time.Duration

	mu      sync.Mutex
	samples []sample // oldest first, spanning at most window
}

type sample struct {
	at     time.Time
	totals map[*Task]Totals
}

// NewSampler samples the tasks that tasks returns now, once; Sample adds
// later readings, of the tasks it returns then.
func NewSampler(tasks func() []*Task, window time.Duration) *Sampler {
	s := &Sampler{tasks: tasks, window: window}
	s.Sample(time.Now())
	return s
}

// Sample reads every task, and forgets readings older than the window
// (keeping one older reading while it is the only one that far back).
func (s *Sampler) Sample(now time.Time) {
	tasks := s.tasks()
	sm := sample{at: now, totals: make(map[*Task]Totals, len(tasks))}
	for _, t := range tasks {
		sm.totals[t] = t.Read()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.samples = append(s.samples, sm)
	for len(s.samples) > 2 && now.Sub(s.samples[1].at) >= s.window {
		s.samples = s.samples[1:]
	}
}

// Rates returns t's rates from the oldest kept reading of it to now; zero
// when t was never sampled (a task that started since the last tick) or
// less than a millisecond passed.
func (s *Sampler) Rates(t *Task) Rates {
	s.mu.Lock()
	var o Totals
	var at time.Time
	for _, sm := range s.samples {
		if r, ok := sm.totals[t]; ok {
			o, at = r, sm.at
			break
		}
	}
	s.mu.Unlock()
	if at.IsZero() {
		return Rates{}
	}
	now := t.Read()
	dt := time.Since(at).Seconds()
	if dt < 0.001 {
		return Rates{}
	}
	perSecond := func(d int64) float64 { return float64(d) / dt }
	msPerSecond := func(d time.Duration) float64 {
		return min(1000, max(0, float64(d)/float64(time.Millisecond)/dt))
	}
	return Rates{
		RecordsInPerSecond: perSecond(now.RecordsIn - o.RecordsIn), RecordsOutPerSecond: perSecond(now.RecordsOut - o.RecordsOut),
		BytesInPerSecond: perSecond(now.BytesIn - o.BytesIn), BytesOutPerSecond: perSecond(now.BytesOut - o.BytesOut),
		BusyTimeMsPerSecond:          msPerSecond(now.Busy - o.Busy),
		IdleTimeMsPerSecond:          msPerSecond(now.Idle - o.Idle),
		BackPressuredTimeMsPerSecond: msPerSecond(now.BackPressured - o.BackPressured),
	}
}
