package job

import (
	"log/slog"
	"sync"
	"time"
)

// JobState is where a job is in its lifecycle, as Flink's JobStatus:
//
//	Created → Running → Finished
//	                  ↘ Canceling → Canceled   (ctx canceled)
//	                  ↘ Failing   → Failed     (a task failed, no restart left)
//	                  ↘ Restarting → Running   (a task failed, restarted from
//	                                            the latest checkpoint)
//
// Canceling and Failing last while the tasks stop: every UDF operator takes
// its cancel path and every worker process goes. The first of cancel and
// failure decides which way the job goes; a failure that follows a cancel
// (tasks erroring because they were canceled) keeps it Canceling.
type JobState int

const (
	Created JobState = iota
	Running
	Canceling
	Canceled
	Failing
	Failed
	Finished
	Restarting
)

var jobStateNames = [...]string{"CREATED", "RUNNING", "CANCELING", "CANCELED", "FAILING", "FAILED", "FINISHED", "RESTARTING"}

func (s JobState) String() string {
	if s < 0 || int(s) >= len(jobStateNames) {
		return "UNKNOWN"
	}
	return jobStateNames[s]
}

// Terminal reports whether the job can leave s no more.
func (s JobState) Terminal() bool { return s == Canceled || s == Failed || s == Finished }

// StateChange is one transition, with the time it happened.
type StateChange struct {
	State JobState
	At    time.Time
}

// lifecycle holds a job's state and calls the observer on each change.
type lifecycle struct {
	observe func(StateChange)
	mu      struct {
		sync.Mutex
		state   JobState
		history []StateChange
	}
}

// logStateChanges returns an observer that logs each change at info and
// then calls observe (when set).
func logStateChanges(log *slog.Logger, jobName string, observe func(StateChange)) func(StateChange) {
	return func(c StateChange) {
		log.Info("job state changed", "state", c.State, "name", jobName)
		if observe != nil {
			observe(c)
		}
	}
}

func newLifecycle(observe func(StateChange)) *lifecycle {
	l := &lifecycle{observe: observe}
	l.mu.history = []StateChange{{State: Created, At: time.Now()}}
	return l
}

// move goes to `to` when the job is in one of `from`, and reports whether
// it did. The observer runs outside the lock, in transition order: moves
// are serialized by the callers (Start, the first failure or cancel, the
// end), and each state is entered once.
func (l *lifecycle) move(to JobState, from ...JobState) bool {
	l.mu.Lock()
	ok := false
	for _, f := range from {
		ok = ok || l.mu.state == f
	}
	var c StateChange
	if ok {
		c = StateChange{State: to, At: time.Now()}
		l.mu.state = to
		l.mu.history = append(l.mu.history, c)
	}
	l.mu.Unlock()
	if ok && l.observe != nil {
		l.observe(c)
	}
	return ok
}

func (l *lifecycle) state() JobState {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.state
}

func (l *lifecycle) history() []StateChange {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]StateChange(nil), l.mu.history...)
}
