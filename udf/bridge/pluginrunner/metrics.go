package pluginrunner

import "time"

// Metrics receives what a runner counts; it is called with atomics-cheap
// calls per batch. The runtime's is runtime/metrics.UDF: the interface
// keeps this package from importing the runtime.
type Metrics interface {
	// AddBatch counts a batch of rows sent to the worker.
	AddBatch(rows int64)
	// AddAnswered counts an answered batch the worker spent d on.
	AddAnswered(d time.Duration)
	// AddInFlight adds n (negative: answered or dropped) to the batches
	// sent and not answered yet.
	AddInFlight(n int64)
	// WorkerOpened and WorkerGone say when worker pid starts and stops
	// serving the runner.
	WorkerOpened(pid int)
	WorkerGone(pid int)
}

// discardMetrics counts nothing: Options.Metrics when none is given.
type discardMetrics struct{}

func (discardMetrics) AddBatch(int64)            {}
func (discardMetrics) AddAnswered(time.Duration) {}
func (discardMetrics) AddInFlight(int64)         {}
func (discardMetrics) WorkerOpened(int)          {}
func (discardMetrics) WorkerGone(int)            {}
