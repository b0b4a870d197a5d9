package poll

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// A condition made true by another goroutine is seen; the intervals grow,
// so a wait of a second costs a few dozen checks, not a thousand.
func TestUntilSeesAConditionAnotherGoroutineSets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var done atomic.Bool
		var checks atomic.Int64
		go func() {
			time.Sleep(time.Second) // the bubble's clock: no real wait
			done.Store(true)
		}()
		Until(t, time.Minute, "the flag", func() bool {
			checks.Add(1)
			return done.Load()
		})
		if n := checks.Load(); n < 2 || n > 40 {
			t.Fatalf("%d checks for a one-second wait, want a few dozen at most", n)
		}
	})
}

// A condition that never holds ends at the timeout, checked one last time
// at the deadline.
func TestWithinGivesUpAtTheTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		if Within(200*time.Millisecond, func() bool { return false }) {
			t.Fatal("a false condition was reported to hold")
		}
		if waited := time.Since(start); waited != 200*time.Millisecond {
			t.Fatalf("gave up after %v, want exactly the timeout (the bubble's clock)", waited)
		}
	})
}

// A condition true at once costs no wait.
func TestWithinChecksAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		if !Within(time.Second, func() bool { return true }) || time.Since(start) != 0 {
			t.Fatal("a true condition was not seen at once")
		}
	})
}
