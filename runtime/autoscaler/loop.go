package autoscaler

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/flinkgo/flinkgo/runtime/config"
	"github.com/flinkgo/flinkgo/runtime/metrics"
	"github.com/flinkgo/flinkgo/runtime/plan"
)

// Job is the running job a Loop scales (package job's Job, adapted).
type Job interface {
	// Current is the graph the job runs, its subtasks' metrics by chain
	// head operator ID and its UDF operators' metrics (nil: none; a
	// rescale replaces all three), and its number of attempts (a restart
	// after a failure adds one).
	Current() (*plan.Graph, [][]*metrics.Task, *metrics.UDFs, int)
	// RescalePending reports a rescale asked for and not yet done.
	RescalePending() bool
	// Rescale asks for new parallelism by operator uid and returns the
	// rescale's id.
	Rescale(parallelism map[string]int) (string, error)
	// Record keeps a decision (for the REST API and the dashboard).
	Record(Decision)
}

// Loop samples a job's metrics and rescales the vertices whose UDFs
// declare concurrency bounds, as the Flink Kubernetes operator's
// autoscaler: nothing is collected during the stabilization interval
// after the job starts or rescales; once a full metrics window is
// collected, every evaluation (each tenth of the window, at least a
// second apart) decides each scaled vertex over the window (Decide), and
// any change is asked for in one rescale.
type Loop struct {
	job Job
	cfg config.AutoscalerConfig
	log *slog.Logger
	now func() time.Time

	graph   *plan.Graph // the graph the readings are of
	attempt int         // and the attempt
	// since is when every subtask of the scaled vertices of graph began
	// to work (or, at the latest, stabilization + window after the graph
	// changed); active reports it happened.
	since    time.Time
	active   bool
	vertices []Vertex
	readings []Reading // oldest first, spanning at least the window once full
}

// NewLoop returns the loop of job; log receives its decisions (changes at
// info, the others at debug).
func NewLoop(job Job, cfg config.AutoscalerConfig, log *slog.Logger) *Loop {
	return &Loop{job: job, cfg: cfg, log: log, now: time.Now}
}

// Interval is how often Run evaluates: a tenth of the metrics window, at
// least a second.
func (l *Loop) Interval() time.Duration { return max(time.Second, l.cfg.MetricsWindow/10) }

// Run evaluates every Interval until ctx ends or stop is closed.
func (l *Loop) Run(ctx context.Context, stop <-chan struct{}) {
	t := time.NewTicker(l.Interval())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-stop:
			return
		case <-t.C:
			l.Step()
		}
	}
}

// Step is one evaluation: it samples the job and, with a full window and
// no rescale pending, decides every scaled vertex. It returns the
// decisions made (none while stabilizing or collecting).
func (l *Loop) Step() []Decision {
	now := l.now()
	g, tasks, udfs, attempt := l.job.Current()
	if g != l.graph || attempt != l.attempt {
		// Started, rescaled or restarted: the old readings are of other
		// tasks, or span the restart.
		l.graph, l.attempt, l.since, l.active, l.readings = g, attempt, now, false, nil
		l.vertices = Vertices(g, tasks)
		for i := range l.vertices {
			l.vertices[i].UDFs = udfs
		}
	}
	if !l.active {
		// A UDF subtask counts no busy time before its first batch is
		// done, and that batch waits for the worker to start:
		// stabilization counts from when every one has been busy, as
		// Flink's from when every task runs.
		if !scaledSubtasksWorked(l.vertices) && now.Sub(l.since) < l.cfg.Stabilization+l.cfg.MetricsWindow {
			return nil
		}
		l.since, l.active = now, true
	}
	if now.Sub(l.since) < l.cfg.Stabilization {
		return nil
	}
	l.readings = append(l.readings, Read(l.vertices, now))
	for len(l.readings) > 2 && now.Sub(l.readings[1].At) >= l.cfg.MetricsWindow {
		l.readings = l.readings[1:]
	}
	if now.Sub(l.readings[0].At) < l.cfg.MetricsWindow || l.job.RescalePending() {
		return nil
	}
	latest := l.readings[len(l.readings)-1]
	rates := WindowRates(l.readings[0], latest)
	target := TargetRates(l.vertices, rates)
	// The backlog as it is now, as Flink's catch-up rate takes the latest lag.
	backlog := Backlogs(l.vertices, rates, latest.Pending())
	params := Params{TargetUtilization: l.cfg.Target, Boundary: l.cfg.Boundary,
		ScaleDownInterval: l.cfg.ScaleDownInterval, CatchUpDuration: l.cfg.CatchUpDuration}
	var decisions []Decision
	want := map[string]int{}
	for i, v := range l.vertices {
		if v.Bounds.Zero() {
			continue
		}
		d, err := Decide(Window{
			UID: v.UIDs[0], Parallelism: v.Parallelism,
			Min: v.Bounds.Min, Max: min(v.Bounds.Max, g.MaxParallelism),
			RecordsInPerSec: rates[i].In, BusyRatio: rates[i].Busy, TargetRate: target[i], Backlog: backlog[i],
			SinceLastRescale: now.Sub(l.since),
		}, params)
		d.At = now
		if err != nil {
			d.Err = err.Error()
		} else if d.To != d.From {
			for _, uid := range v.UIDs {
				want[uid] = d.To
			}
		}
		decisions = append(decisions, d)
	}
	var rescale string
	var rescaleErr error
	if len(want) > 0 {
		rescale, rescaleErr = l.job.Rescale(want)
	}
	for i := range decisions {
		d := &decisions[i]
		if d.To != d.From {
			if rescaleErr != nil {
				d.Err = fmt.Sprintf("rescale refused: %v", rescaleErr)
			} else {
				d.Rescale = rescale
			}
		}
		l.logDecision(*d)
		l.job.Record(*d)
	}
	return decisions
}

// scaledSubtasksWorked reports whether every subtask of every scaled
// vertex has counted busy time (idle time proves nothing: a subtask
// waiting for input counts it before its worker started).
func scaledSubtasksWorked(vs []Vertex) bool {
	for _, v := range vs {
		if v.Bounds.Zero() {
			continue
		}
		for _, t := range v.Tasks {
			if t.Busy.Load() == 0 {
				return false
			}
		}
	}
	return true
}

func (l *Loop) logDecision(d Decision) {
	level := slog.LevelDebug
	switch {
	case d.Err != "":
		level = slog.LevelWarn
	case d.To != d.From:
		level = slog.LevelInfo
	}
	l.log.Log(context.Background(), level, "autoscaler decision", "uid", d.UID, "from", d.From, "to", d.To,
		"records_in_per_second", round(d.RecordsInPerSec), "busy_ratio", round(d.BusyRatio),
		"true_rate", round(d.TrueRate), "target_rate", round(d.TargetRate), "backlog", round(d.Backlog),
		"catch_up_rate", round(d.CatchUpRate), "utilization", round(d.Utilization),
		"bounds", fmt.Sprintf("[%d, %d]", d.Min, d.Max), "reason", d.Reason, "rescale", d.Rescale, "error", d.Err)
}

func round(x float64) float64 { return float64(int64(x*1000+0.5)) / 1000 }
