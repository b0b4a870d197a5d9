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

// Sampler reads a set of tasks once per tick and keeps the readings of its
// window, to give each task's rates between the oldest reading in the
// window and now (Flink's MeterView).
type Sampler struct {
	tasks  []*Task
	window time.Duration

	mu      sync.Mutex
	samples []sample // oldest first, spanning at most window
}

type sample struct {
	at     time.Time
	totals []Totals
}

// NewSampler samples tasks now, once; Sample adds later readings.
func NewSampler(tasks []*Task, window time.Duration) *Sampler {
	s := &Sampler{tasks: tasks, window: window}
	s.Sample(time.Now())
	return s
}

// Sample reads every task, and forgets readings older than the window
// (keeping one older reading while it is the only one that far back).
func (s *Sampler) Sample(now time.Time) {
	sm := sample{at: now, totals: make([]Totals, len(s.tasks))}
	for i, t := range s.tasks {
		sm.totals[i] = t.Read()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.samples = append(s.samples, sm)
	for len(s.samples) > 2 && now.Sub(s.samples[1].at) >= s.window {
		s.samples = s.samples[1:]
	}
}

// Rates returns task i's rates from the oldest kept reading to now; zero
// when less than a millisecond passed.
func (s *Sampler) Rates(i int) Rates {
	s.mu.Lock()
	old := s.samples[0]
	s.mu.Unlock()
	now := s.tasks[i].Read()
	dt := time.Since(old.at).Seconds()
	if dt < 0.001 {
		return Rates{}
	}
	o := old.totals[i]
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

// Run samples every tick until done is closed.
func (s *Sampler) Run(done <-chan struct{}, tick time.Duration) {
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case now := <-t.C:
			s.Sample(now)
		}
	}
}
