package source

import "time"

// Backlog is a Reader that knows how many records it is behind (Flink's
// pendingRecords metric): a datagen with rows_per_second, the rows its
// schedule has due that it has not returned yet. Call it from the
// goroutine that calls Next.
type Backlog interface {
	PendingRecords() int64
}

// pending is how many rows the rate has due by now beyond those sent (a
// consumer slower than the rate holds the reader back); zero without a
// rate or before the first wait.
func (p *pacer) pending() int64 {
	if p.rate <= 0 || p.start.IsZero() {
		return 0
	}
	return max(0, int64(time.Since(p.start).Seconds()*p.rate)-p.sent)
}

// PendingRecords are the rows due by the datagen's rate that Next has not
// returned yet (Backlog).
func (g *datagen) PendingRecords() int64 { return g.pace.pending() }
