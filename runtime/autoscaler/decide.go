package autoscaler

import (
	"fmt"
	"math"
	"time"
)

// Params are the job-wide settings (Flink's job.autoscaler.* keys).
type Params struct {
	TargetUtilization float64       // job.autoscaler.utilization.target
	Boundary          float64       // job.autoscaler.utilization.boundary
	ScaleDownInterval time.Duration // job.autoscaler.scale-down.interval
	// CatchUpDuration is the time a backlog should be read off in
	// (job.autoscaler.catch-up.duration); 0: no catch-up term.
	CatchUpDuration time.Duration
}

// DefaultParams are Flink's defaults.
func DefaultParams() Params {
	return Params{TargetUtilization: 0.7, Boundary: 0.3, ScaleDownInterval: time.Hour, CatchUpDuration: 5 * time.Minute}
}

// Window is one vertex's metrics averaged over the metrics window.
type Window struct {
	UID             string
	Parallelism     int
	Min, Max        int     // the UDF's concurrency bounds (and max parallelism)
	RecordsInPerSec float64 // summed over subtasks
	BusyRatio       float64 // average busyTimeMsPerSecond / 1000, in [0, 1]
	TargetRate      float64 // records per second the vertex must take (from the sources)
	// Backlog is the records the vertex has still to take for the
	// sources' pending records (Backlogs).
	Backlog          float64
	SinceLastRescale time.Duration
}

// Decision is what Decide chose and why, with its inputs; the loop logs
// it, the job keeps it and the REST API shows it.
type Decision struct {
	// At is when it was made (set by the loop).
	At  time.Time
	UID string
	// Min and Max are the bounds it kept to.
	Min, Max        int
	From, To        int
	RecordsInPerSec float64
	BusyRatio       float64
	// TrueRate is RecordsInPerSec / BusyRatio: what the vertex takes at
	// full utilization; 0 when unknown.
	TrueRate   float64
	TargetRate float64
	// Backlog is Window.Backlog; CatchUpRate is Backlog over the catch-up
	// duration, the rate the vertex needs on top of TargetRate to read the
	// backlog off in that time (Flink's catch-up data rate).
	Backlog, CatchUpRate float64
	// Utilization is TargetRate / TrueRate, the vertex's expected
	// utilization at its current parallelism.
	Utilization float64
	Reason      string
	// Rescale is the id of the rescale the loop asked for (Job.Rescale),
	// Err why it could not ask.
	Rescale, Err string
}

// Decide returns the parallelism for one vertex. It never leaves [Min, Max].
//
// As the Flink operator's JobVertexScaler with AutoScalerUtils'
// target processing capacity (no restart-time term): the capacity the
// vertex needs at utilization u is catchUp + target / u; it scales up when
// its true rate is below the capacity at target+boundary, down when above
// the one at target-boundary, to ceil(p * capacity at target / true rate).
// Without a backlog that is: expected utilization target / true rate
// outside the band.
func Decide(w Window, p Params) (Decision, error) {
	d := Decision{UID: w.UID, Min: w.Min, Max: w.Max, From: w.Parallelism, To: w.Parallelism,
		RecordsInPerSec: w.RecordsInPerSec, TargetRate: w.TargetRate, BusyRatio: w.BusyRatio, Backlog: w.Backlog}
	if w.Min < 1 || w.Max < w.Min || w.Parallelism < 1 {
		return d, fmt.Errorf("autoscaler: vertex %q: invalid bounds min=%d max=%d parallelism=%d; "+
			"declare concurrency=(min, max) with 1 <= min <= max", w.UID, w.Min, w.Max, w.Parallelism)
	}
	if p.TargetUtilization <= 0 || p.TargetUtilization > 1 || p.Boundary < 0 || p.CatchUpDuration < 0 {
		return d, fmt.Errorf("autoscaler: utilization target %v must be in (0, 1], boundary %v and catch-up duration %v not negative",
			p.TargetUtilization, p.Boundary, p.CatchUpDuration)
	}
	if p.CatchUpDuration > 0 && w.Backlog > 0 {
		d.CatchUpRate = w.Backlog / p.CatchUpDuration.Seconds()
	}
	clamped := clamp(w.Parallelism, w.Min, w.Max)
	if w.BusyRatio <= 0 || w.RecordsInPerSec <= 0 {
		// No work measured: the true rate is unknown, keep the parallelism
		// (only bring it back into bounds).
		d.To, d.Reason = clamped, "no input or no busy time in the window"
		return d, nil
	}
	d.TrueRate = w.RecordsInPerSec / math.Min(w.BusyRatio, 1)
	d.Utilization = w.TargetRate / d.TrueRate
	to, reason := choose(w, p, d.TrueRate, d.CatchUpRate)
	if d.CatchUpRate > 0 {
		// Said only where the backlog changed the outcome.
		if noCatchUp, _ := choose(w, p, d.TrueRate, 0); noCatchUp != to {
			reason += " with the catch-up rate"
		}
	}
	d.To, d.Reason = to, reason
	return d, nil
}

// choose is the parallelism for w at true rate trueRate and catch-up rate
// catchUp, and why.
func choose(w Window, p Params, trueRate, catchUp float64) (int, string) {
	capacity := func(u float64) float64 { return catchUp + w.TargetRate/u }
	clamped := clamp(w.Parallelism, w.Min, w.Max)
	ideal := clamp(int(math.Ceil(float64(w.Parallelism)*capacity(p.TargetUtilization)/trueRate)), w.Min, w.Max)
	lower := p.TargetUtilization - p.Boundary
	up := trueRate < capacity(p.TargetUtilization+p.Boundary)
	down := lower > 0 && trueRate > capacity(lower)
	switch {
	case up && ideal > w.Parallelism:
		return ideal, "scale up: utilization above target+boundary"
	case up:
		return clamped, "at the max bound: utilization above target+boundary"
	case down && ideal < w.Parallelism && w.SinceLastRescale < p.ScaleDownInterval:
		return clamped, "scale down deferred: within scale-down interval"
	case down && ideal < w.Parallelism:
		return ideal, "scale down: utilization below target-boundary"
	case down && w.Parallelism <= w.Min:
		return clamped, "at the min bound: utilization below target-boundary"
	}
	return clamped, "within utilization band"
}

func clamp(v, lo, hi int) int { return max(lo, min(hi, v)) }
