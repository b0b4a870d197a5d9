package watermark

import (
	"fmt"
	"math"
	"sync"
	"time"
)

// Generator turns the event times of one stream (a source split, or the
// output of a timestamp extractor) into watermarks, as Flink's
// WatermarkGenerator. The caller calls OnEvent for the rows it reads and
// OnPeriodicEmit every pipeline.auto-watermark-interval, and sends what they
// return.
type Generator interface {
	// OnEvent accounts for a row with event time ts. For a batch, passing
	// its greatest timestamp once is the same as passing every row. It
	// returns what must be sent before the row (an Active status when the
	// stream was idle), usually nothing.
	OnEvent(ts int64) Emission
	// OnPeriodicEmit returns the watermark to send if it advanced since the
	// last one returned, or an Idle status.
	OnPeriodicEmit() Emission
}

// BoundedOutOfOrderness is Flink's BoundedOutOfOrdernessWatermarks: rows may
// arrive up to a delay later than the greatest timestamp seen, so the
// watermark is max - delay - 1. A delay of 0 is Flink's ascending
// (monotonous) strategy: max - 1.
type BoundedOutOfOrderness struct {
	delay int64
	// max starts so that the first watermark is MinWatermark, without
	// overflow for any delay (as Flink's).
	max     int64
	emitted Watermark
}

var _ Generator = (*BoundedOutOfOrderness)(nil)

// NewBoundedOutOfOrderness returns a generator for rows at most delayMillis
// out of order. A negative delay is an error.
func NewBoundedOutOfOrderness(delayMillis int64) (*BoundedOutOfOrderness, error) {
	if delayMillis < 0 {
		return nil, fmt.Errorf("watermark: max out-of-orderness is %dms; it must be 0 or more", delayMillis)
	}
	return &BoundedOutOfOrderness{delay: delayMillis, max: math.MinInt64 + delayMillis + 1, emitted: MinWatermark}, nil
}

// NewMonotonous returns the generator for ascending timestamps (delay 0),
// Flink's forMonotonousTimestamps.
func NewMonotonous() *BoundedOutOfOrderness {
	g, _ := NewBoundedOutOfOrderness(0)
	return g
}

// OnEvent tracks the greatest timestamp. It never asks to send anything.
func (g *BoundedOutOfOrderness) OnEvent(ts int64) Emission {
	if ts > g.max {
		g.max = ts
	}
	return Emission{}
}

// OnPeriodicEmit returns max - delay - 1 when it is above the last watermark
// returned. Before any row it returns nothing (Flink emits MinWatermark,
// which its output drops).
func (g *BoundedOutOfOrderness) OnPeriodicEmit() Emission {
	if w := g.Current(); w > g.emitted {
		g.emitted = w
		return watermarkEmission(w)
	}
	return Emission{}
}

// Current is the watermark the rows seen so far allow, emitted or not.
func (g *BoundedOutOfOrderness) Current() Watermark {
	return Watermark(g.max - g.delay - 1)
}

// Clock reads processing time for idleness detection. Tests use a
// ManualClock, so that no test sleeps.
type Clock interface {
	Now() time.Time
}

// SystemClock is the wall clock (with Go's monotonic reading, so wall-clock
// jumps do not mark streams idle).
type SystemClock struct{}

// Now is time.Now.
func (SystemClock) Now() time.Time { return time.Now() }

// ManualClock is a Clock that moves only when told to. It is safe for
// concurrent use.
type ManualClock struct {
	mu  sync.Mutex
	now time.Time
}

// NewManualClock returns a clock reading start.
func NewManualClock(start time.Time) *ManualClock { return &ManualClock{now: start} }

// Now returns the current reading.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// WithIdleness is Flink's WatermarksWithIdleness: it marks the stream idle
// when no row came for longer than the timeout, so that it stops holding
// back the minimum downstream, and active again with its next row.
//
// As Flink's, idleness is only evaluated on periodic emits: the countdown
// starts at the first periodic emit that saw no row since the previous one,
// and the stream turns idle at the first periodic emit strictly more than
// the timeout after that. Unlike Flink's, which leaves it to the next
// watermark, the row that ends idleness returns the Active status at once,
// so that downstream counts the stream again before its rows arrive.
type WithIdleness struct {
	inner   Generator
	timeout time.Duration
	clock   Clock
	idle    bool

	// The idleness timer: rows counted since the last check, and when the
	// quiet period began.
	rowsSinceCheck bool
	quietSince     time.Time
	quiet          bool
}

var _ Generator = (*WithIdleness)(nil)

// NewWithIdleness wraps inner with idleness detection after timeout (which
// must be positive), reading time from clock.
func NewWithIdleness(inner Generator, timeout time.Duration, clock Clock) (*WithIdleness, error) {
	if timeout <= 0 {
		return nil, fmt.Errorf("watermark: idle timeout is %v; it must be positive", timeout)
	}
	if inner == nil || clock == nil {
		return nil, fmt.Errorf("watermark: idleness needs a generator and a clock")
	}
	return &WithIdleness{inner: inner, timeout: timeout, clock: clock}, nil
}

// OnEvent passes the row to the inner generator and ends idleness: it
// returns Active when the stream was idle.
func (g *WithIdleness) OnEvent(ts int64) Emission {
	e := g.inner.OnEvent(ts)
	g.rowsSinceCheck = true
	if g.idle {
		g.idle = false
		e = Emission{BecameActive: true}.then(e)
	}
	return e
}

// OnPeriodicEmit returns Idle once when the timeout passed without rows,
// nothing while idle, and the inner generator's watermark otherwise.
func (g *WithIdleness) OnPeriodicEmit() Emission {
	if g.checkIfIdle() {
		if !g.idle {
			g.idle = true
			return Emission{BecameIdle: true}
		}
		return Emission{}
	}
	return g.inner.OnPeriodicEmit()
}

// Idle says whether the stream is marked idle.
func (g *WithIdleness) Idle() bool { return g.idle }

// checkIfIdle is Flink's IdlenessTimer.checkIfIdle.
func (g *WithIdleness) checkIfIdle() bool {
	switch {
	case g.rowsSinceCheck:
		g.rowsSinceCheck, g.quiet = false, false
		return false
	case !g.quiet:
		g.quiet, g.quietSince = true, g.clock.Now()
		return false
	default:
		return g.clock.Now().Sub(g.quietSince) > g.timeout
	}
}
