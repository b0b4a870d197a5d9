package source

import "time"

// pending is how many rows the rate has due by now beyond those sent (a
// consumer slower than the rate holds the reader back), at most those left
// to send; zero without a rate or before the first wait.
func (p *pacer) pending() int64 {
	if p.rate <= 0 || p.start.IsZero() {
		return 0
	}
	due := int64(time.Since(p.start).Seconds() * p.rate)
	if p.left >= 0 {
		due = min(due, p.left)
	}
	return max(0, due-p.sent)
}

// PendingRecords are the rows due by the datagen's rate that Next has not
// returned yet (Backlog).
func (g *datagen) PendingRecords() int64 { return g.pace.pending() }

// PendingRecords are the events of the reader's kind among those due by
// the event rate that Next has not generated yet: the events of every kind
// behind schedule times the kind's share of an epoch (1, 3 or 46 of 50),
// so within one epoch of the exact count (Backlog).
func (g *nexmarkReader) PendingRecords() int64 {
	_, count := nexmarkKindSlots(g.kind)
	return g.pace.pending() * count / nexmarkEpoch
}

// left is how many rows the ranges have not returned yet.
func (rs *rowRanges) left() int64 {
	var n int64
	for _, r := range rs.r {
		n += r.end - r.pos
	}
	return n
}

var (
	_ Backlog = (*datagen)(nil)
	_ Backlog = (*nexmarkReader)(nil)
)

// ThrottledTime is the time the datagen slept for its rate (Throttled).
func (g *datagen) ThrottledTime() time.Duration { return g.pace.waited }

// ThrottledTime is the time the reader slept for its event rate
// (Throttled).
func (g *nexmarkReader) ThrottledTime() time.Duration { return g.pace.waited }
