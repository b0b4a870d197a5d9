package source

import (
	"context"
	"math"
	"time"
)

// pacer keeps a generating reader to a rate of rows (or events) per
// second, counted from its first wait; a zero rate does not wait.
type pacer struct {
	rate  float64
	start time.Time
	sent  int64
	// left is how many there were to send when the reader opened (a
	// bounded one), -1 for no end: the backlog never counts beyond it.
	left int64
	// waited is the time wait slept, in total.
	waited time.Duration
}

// limit caps a batch of n at about a tenth of a second of the rate, so
// that a slow rate still sends often.
func (p *pacer) limit(n int64) int64 {
	if p.rate > 0 {
		n = max(1, min(n, int64(math.Ceil(p.rate/10))))
	}
	return n
}

// wait sleeps until sending n more keeps to the rate, and counts them as
// sent.
func (p *pacer) wait(ctx context.Context, n int64) error {
	if p.rate <= 0 {
		return nil
	}
	if p.start.IsZero() {
		p.start = time.Now()
	}
	due := p.start.Add(time.Duration(float64(p.sent+n) / p.rate * float64(time.Second)))
	p.sent += n
	if d := time.Until(due); d > 0 {
		start := time.Now()
		defer func() { p.waited += time.Since(start) }()
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	return nil
}
