package source

import "time"

// Pending is how many rows the rate has due by now beyond those sent (a
// consumer slower than the rate holds the reader back), at most those left
// to send; zero without a rate or before the first wait.
func (p *Pacer) Pending() int64 {
	if p.Rate <= 0 || p.Start.IsZero() {
		return 0
	}
	due := int64(time.Since(p.Start).Seconds() * p.Rate)
	if p.Left >= 0 {
		due = min(due, p.Left)
	}
	return max(0, due-p.Sent)
}

// Left is how many rows the ranges have not returned yet.
func (rs *RowRanges) Left() int64 {
	var n int64
	for _, r := range rs.r {
		n += r.end - r.pos
	}
	return n
}
