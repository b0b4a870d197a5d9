package poll

import (
	"testing"
	"time"
)

const (
	firstInterval = time.Millisecond
	maxInterval   = 50 * time.Millisecond
)

// Until waits until cond returns true, checking it at growing intervals,
// and fails the test (t.Fatalf, so it must run on the test's goroutine) when
// timeout passes first: "timed out after <timeout> waiting for <what>".
// cond may itself fail the test, for a state that means the wait is
// hopeless (the job ended).
func Until(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Within(timeout, cond) {
		t.Fatalf("timed out after %v waiting for %s", timeout, what)
	}
}

// Within waits until cond returns true or timeout passes, and reports
// whether cond held: for callers that decide themselves what a timeout
// means.
func Within(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	interval := firstInterval
	timer := time.NewTimer(interval)
	defer timer.Stop()
	for {
		if cond() {
			return true
		}
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		timer.Reset(min(interval, left))
		<-timer.C
		interval = min(2*interval, maxInterval)
	}
}
