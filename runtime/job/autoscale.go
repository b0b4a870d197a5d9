package job

import (
	"context"
	"fmt"

	"github.com/flinkgo/flinkgo/runtime/autoscaler"
	"github.com/flinkgo/flinkgo/runtime/config"
	"github.com/flinkgo/flinkgo/runtime/metrics"
	"github.com/flinkgo/flinkgo/runtime/plan"
)

// keptDecisions bounds the autoscaler decisions a job keeps (the oldest
// go first): at one evaluation per tenth of the metrics window, hours of
// history.
const keptDecisions = 1000

// startAutoscaler runs the autoscaler of the job's UDF operators
// (job.autoscaler.enabled) until the job ends; end stops it.
func (j *Job) startAutoscaler(ctx context.Context) {
	j.autoscalerStop = make(chan struct{})
	if !j.config.Autoscaler.Enabled {
		return
	}
	log := j.opts.Logger.With("component", "autoscaler")
	var scaled []string
	for _, v := range autoscaler.Vertices(j.graph(), nil) {
		if !v.Bounds.Zero() {
			scaled = append(scaled, fmt.Sprintf("%s [%d, %d]", v.UIDs[0], v.Bounds.Min, v.Bounds.Max))
		}
	}
	if len(scaled) == 0 {
		log.Warn("job.autoscaler.enabled is set but no UDF declares concurrency=(min, max): nothing to scale; " +
			"declare bounds on the UDFs the autoscaler may rescale")
		return
	}
	log.Info("autoscaler started", "vertices", scaled)
	loop := autoscaler.NewLoop(autoscaleTarget{j}, j.config.Autoscaler, log)
	j.autoscalerDone.Go(func() { loop.Run(ctx, j.autoscalerStop) })
}

// stopAutoscaler stops the autoscaler and waits for it: no rescale is
// asked for after it returns.
func (j *Job) stopAutoscaler() {
	close(j.autoscalerStop)
	j.autoscalerDone.Wait()
}

// AutoscalerConfig is the job's job.autoscaler.* settings.
func (j *Job) AutoscalerConfig() config.AutoscalerConfig { return j.config.Autoscaler }

// AutoscalerDecisions returns the autoscaler's decisions, oldest first
// (the latest keptDecisions). Safe at any time.
func (j *Job) AutoscalerDecisions() []autoscaler.Decision {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]autoscaler.Decision(nil), j.mu.decisions...)
}

// autoscaleTarget is the job as the autoscaler's loop sees it.
type autoscaleTarget struct{ j *Job }

func (t autoscaleTarget) Current() (*plan.Graph, [][]*metrics.Task, *metrics.UDFs, int) {
	t.j.mu.Lock()
	defer t.j.mu.Unlock()
	return t.j.mu.graph, t.j.mu.taskMetrics, t.j.mu.udfMetrics, t.j.mu.attempts
}

func (t autoscaleTarget) RescalePending() bool {
	t.j.mu.Lock()
	defer t.j.mu.Unlock()
	return t.j.mu.pending != nil
}

func (t autoscaleTarget) Rescale(p map[string]int) (string, error) {
	info, err := t.j.Rescale(p)
	return info.ID, err
}

func (t autoscaleTarget) Record(d autoscaler.Decision) {
	t.j.mu.Lock()
	defer t.j.mu.Unlock()
	t.j.mu.decisions = append(t.j.mu.decisions, d)
	if n := len(t.j.mu.decisions); n > keptDecisions {
		t.j.mu.decisions = t.j.mu.decisions[n-keptDecisions:]
	}
}
