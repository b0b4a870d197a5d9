package source

import (
	"context"
	"math"
	"time"
)

// Pacer keeps a generating reader (datagen, Nexmark) to a rate of rows
// (or events) per second, counted from its first wait; a zero rate does
// not wait.
type Pacer struct {
	Rate  float64
	Start time.Time
	Sent  int64
	// left is how many there were to send when the reader opened (a
	// bounded one), -1 for no end: the backlog never counts beyond it.
	Left int64
	// waited is the time wait slept, in total.
	Waited time.Duration
}

// Limit caps a batch of n at about a tenth of a second of the rate, so
// that a slow rate still sends often.
func (p *Pacer) Limit(n int64) int64 {
	if p.Rate > 0 {
		n = max(1, min(n, int64(math.Ceil(p.Rate/10))))
	}
	return n
}

// Wait sleeps until sending n more keeps to the rate, and counts them as
// sent.
func (p *Pacer) Wait(ctx context.Context, n int64) error {
	if p.Rate <= 0 {
		return nil
	}
	if p.Start.IsZero() {
		p.Start = time.Now()
	}
	due := p.Start.Add(time.Duration(float64(p.Sent+n) / p.Rate * float64(time.Second)))
	p.Sent += n
	if d := time.Until(due); d > 0 {
		start := time.Now()
		defer func() { p.Waited += time.Since(start) }()
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
