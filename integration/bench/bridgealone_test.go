package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"golang.org/x/sync/errgroup"

	"github.com/flinkgo/flinkgo/bundle"
	"github.com/flinkgo/flinkgo/udf/bridge"
	"github.com/flinkgo/flinkgo/udf/bridge/pluginrunner"
	"github.com/flinkgo/flinkgo/udf/bridge/proto/workerpb"
)

// bridgeAlone runs calls over the batches of in on `workers` Python
// workers, each a pluginrunner.Runner behind a bundle.Operator driven by a
// goroutine of its own that takes the next batch from in: the bridge's own
// cost, without the planner, tasks, exchange or reordering. bundleSize 0 is
// the default. onResult gets each result's row count, from any of the
// goroutines. It takes ownership of the batches of in.
func bridgeAlone(ctx context.Context, calls []*workerpb.UdfCall, schema *arrow.Schema, workers, batchSize, bundleSize int,
	runner pluginrunner.Options, mem memory.Allocator, in <-chan arrow.RecordBatch, onResult func(rows int64),
) error {
	g, ctx := errgroup.WithContext(ctx)
	for i := range workers {
		ropts := runner
		ropts.Calls, ropts.InputSchema, ropts.Subtask, ropts.Allocator = calls, schema, i, mem
		r, err := pluginrunner.NewRunner(ropts)
		if err != nil {
			return err
		}
		op, err := bundle.NewOperator(bundle.Options{
			Name: fmt.Sprintf("bench worker %d", i), BatchSize: batchSize, BundleSize: bundleSize, MaxBatchBytes: ropts.MaxBatchBytes(), Allocator: mem,
		}, r, func(res bridge.Result) error {
			onResult(res.Batch.NumRows())
			res.Batch.Release()
			return nil
		})
		if err != nil {
			return err
		}
		g.Go(func() error { return drive(ctx, op, in) })
	}
	err := g.Wait()
	for b := range in {
		b.Release()
	}
	return err
}

// drive feeds op until in is closed, finishing bundles on their deadline.
func drive(ctx context.Context, op *bundle.Operator, in <-chan arrow.RecordBatch) (err error) {
	defer func() {
		if err != nil {
			op.Cancel(err)
			_ = op.Close(ctx)
		}
	}()
	if err := op.Open(ctx); err != nil {
		return err
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		var deadline <-chan time.Time
		if at, ok := op.BundleDeadline(); ok {
			timer.Reset(time.Until(at))
			deadline = timer.C
		}
		select {
		case b, ok := <-in:
			if !ok {
				return op.Close(ctx)
			}
			err := op.ProcessBatch(ctx, b)
			b.Release()
			if err != nil {
				return err
			}
		case <-deadline:
			if err := op.FinishBundle(ctx); err != nil {
				return err
			}
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}
