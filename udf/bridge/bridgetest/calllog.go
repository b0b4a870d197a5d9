package bridgetest

import (
	"slices"
	"sync"
)

// CallLog is an ordered record of calls, safe from any goroutine. A Runner
// writes "runner.Open", "runner.Process", "runner.Flush",
// "runner.NotifyNoMoreResults", "runner.Close" and "runner.Cancel"; a test may
// add its own entries to the same log to check how calls interleave.
type CallLog struct {
	mu    sync.Mutex
	calls []string
}

// Add appends call.
func (l *CallLog) Add(call string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, call)
}

// Snapshot returns a copy of the calls so far, in order.
func (l *CallLog) Snapshot() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.calls)
}

// Index is the position of the first call equal to call, -1 when none.
func (l *CallLog) Index(call string) int { return slices.Index(l.Snapshot(), call) }

// LastIndex is the position of the last call equal to call, -1 when none.
func (l *CallLog) LastIndex(call string) int {
	calls := l.Snapshot()
	for i := len(calls) - 1; i >= 0; i-- {
		if calls[i] == call {
			return i
		}
	}
	return -1
}

// Count is how many calls equal call.
func (l *CallLog) Count(call string) int {
	n := 0
	for _, c := range l.Snapshot() {
		if c == call {
			n++
		}
	}
	return n
}
