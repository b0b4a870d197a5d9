package metrics

import (
	"slices"
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
// window, to give each task's rates between the oldest reading in the
// window and now (Flink's MeterView). The tasks are the job's current
// ones: when a rescale replaces them, the readings start over.
type Sampler struct {
	tasks  func() []*Task
	window time.Duration

	mu      sync.Mutex
	current []*Task  // the tasks of samples
	samples []sample // oldest first, spanning at most window
}

type sample struct {
	at     time.Time
	totals []Totals
}

// NewSampler samples the tasks that tasks returns now, once; Sample adds
// later readings.
func NewSampler(tasks func() []*Task, window time.Duration) *Sampler {
	s := &Sampler{tasks: tasks, window: window}
	s.Sample(time.Now())
	return s
}

// Sample reads every task, and forgets readings older than the window
// (keeping one older reading while it is the only one that far back).
func (s *Sampler) Sample(now time.Time) {
	tasks := s.tasks()
	sm := sample{at: now, totals: make([]Totals, len(tasks))}
	for i, t := range tasks {
		sm.totals[i] = t.Read()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !slices.Equal(tasks, s.current) {
		s.current, s.samples = tasks, nil
	}
	s.samples = append(s.samples, sm)
	for len(s.samples) > 2 && now.Sub(s.samples[1].at) >= s.window {
		s.samples = s.samples[1:]
	}
}

// Rates returns task i's rates from the oldest kept reading to now; zero
// when less than a millisecond passed, or when the job's tasks changed
// since the last reading (a rescale: none of the new ones is read yet).
func (s *Sampler) Rates(i int) Rates {
	tasks := s.tasks()
	s.mu.Lock()
	old, same := s.samples[0], slices.Equal(tasks, s.current)
	s.mu.Unlock()
	if !same || i < 0 || i >= len(tasks) {
		return Rates{}
	}
	now := tasks[i].Read()
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
