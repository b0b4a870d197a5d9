package pluginrunner_test

import (
	"context"
	"runtime"
	"testing"

	"github.com/flinkgo/flinkgo/runtime/metrics"
	"github.com/flinkgo/flinkgo/udf/bridge/bridgetest/goworker"
)

// The runner counts into Options.Metrics what it sends and what comes
// back, over the runners of one subtask's attempts: batches, rows, the
// worker's time, nothing in flight once every batch is answered, the
// worker's memory from /proc, and the second worker as a restart.
func TestRunnerCountsIntoItsMetrics(t *testing.T) {
	f := newFixture(t, goWorker(goworker.Serve))
	u := metrics.NewUDF()
	for attempt := range 2 {
		opts := f.options(int64Schema, goUDF("ident", goworker.Identity))
		opts.Metrics = u
		r := f.open(opts)
		for seq, rows := range [][]int64{{1, 2, 3}, {4, 5}} {
			b := f.int64Batch(rows...)
			err := r.Process(context.Background(), int64(seq), b)
			b.Release()
			if err != nil {
				t.Fatal(err)
			}
		}
		flushAndRelease(t, r)
		if n := u.InFlight.Load(); n != 0 {
			t.Errorf("attempt %d: %d batches in flight after every result came", attempt, n)
		}
		if runtime.GOOS == "linux" && u.RSS() <= 0 {
			t.Errorf("attempt %d: no worker memory while the worker runs", attempt)
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
	v := u.Values()
	for n, want := range map[string]float64{
		metrics.UDFNumBatches: 4, metrics.UDFNumRecords: 10, metrics.UDFBatchesInFlight: 0, metrics.UDFNumWorkerRestarts: 1,
	} {
		if v[n] != want {
			t.Errorf("%s = %v, want %v", n, v[n], want)
		}
	}
	if u.Answered.Load() != 4 || u.WorkerTime.Load() <= 0 {
		t.Errorf("answered %d batches in %d ns of worker time", u.Answered.Load(), u.WorkerTime.Load())
	}
}
