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
}

// DefaultParams are Flink's defaults for the utilization band.
func DefaultParams() Params {
	return Params{TargetUtilization: 0.7, Boundary: 0.3, ScaleDownInterval: time.Hour}
}

// Window is one vertex's metrics averaged over the metrics window.
type Window struct {
	UID              string
	Parallelism      int
	Min, Max         int     // the UDF's concurrency bounds (and max parallelism)
	RecordsInPerSec  float64 // summed over subtasks
	BusyRatio        float64 // average busyTimeMsPerSecond / 1000, in [0, 1]
	TargetRate       float64 // records per second the vertex must take (from the sources)
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
	// Utilization is TargetRate / TrueRate, the vertex's expected
	// utilization at its current parallelism.
	Utilization float64
	Reason      string
	// Rescale is the id of the rescale the loop asked for (Job.Rescale),
	// Err why it could not ask.
	Rescale, Err string
}

// Decide returns the parallelism for one vertex. It never leaves [Min, Max].
func Decide(w Window, p Params) (Decision, error) {
	d := Decision{UID: w.UID, Min: w.Min, Max: w.Max, From: w.Parallelism, To: w.Parallelism,
		RecordsInPerSec: w.RecordsInPerSec, TargetRate: w.TargetRate, BusyRatio: w.BusyRatio}
	if w.Min < 1 || w.Max < w.Min || w.Parallelism < 1 {
		return d, fmt.Errorf("autoscaler: vertex %q: invalid bounds min=%d max=%d parallelism=%d; "+
			"declare concurrency=(min, max) with 1 <= min <= max", w.UID, w.Min, w.Max, w.Parallelism)
	}
	if p.TargetUtilization <= 0 || p.TargetUtilization > 1 || p.Boundary < 0 {
		return d, fmt.Errorf("autoscaler: utilization target %v must be in (0, 1] and boundary %v >= 0",
			p.TargetUtilization, p.Boundary)
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
	ideal := clamp(int(math.Ceil(float64(w.Parallelism)*w.TargetRate/(d.TrueRate*p.TargetUtilization))), w.Min, w.Max)
	up, down := d.Utilization > p.TargetUtilization+p.Boundary, d.Utilization < p.TargetUtilization-p.Boundary
	switch {
	case up && ideal > w.Parallelism:
		d.To, d.Reason = ideal, "scale up: utilization above target+boundary"
	case up:
		d.To, d.Reason = clamped, "at the max bound: utilization above target+boundary"
	case down && ideal < w.Parallelism && w.SinceLastRescale < p.ScaleDownInterval:
		d.To, d.Reason = clamped, "scale down deferred: within scale-down interval"
	case down && ideal < w.Parallelism:
		d.To, d.Reason = ideal, "scale down: utilization below target-boundary"
	case down && w.Parallelism <= w.Min:
		d.To, d.Reason = clamped, "at the min bound: utilization below target-boundary"
	default:
		d.To, d.Reason = clamped, "within utilization band"
	}
	return d, nil
}

func clamp(v, lo, hi int) int { return max(lo, min(hi, v)) }
