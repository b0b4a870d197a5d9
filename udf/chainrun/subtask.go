package chainrun

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flinkgo/flinkgo/bundle"
	"github.com/flinkgo/flinkgo/udf/bridge"
	"github.com/flinkgo/flinkgo/udf/bridge/pluginrunner"
)

// subtask is one parallel instance: one worker process behind one
// external-function operator, fed by its own task goroutine.
type subtask struct {
	index  int
	runner *pluginrunner.Runner
	op     *bundle.Operator
	// in carries the subtask's input batches; closed by the distributor.
	in chan arrow.RecordBatch
	// out carries result batches in the subtask's input order; closed when
	// the subtask ends.
	out chan arrow.RecordBatch
	// emitCtx is the run's context, set when the subtask starts; emit waits
	// on it.
	emitCtx context.Context
}

// Channel capacities: enough slack that round-robin distribution and
// in-order merging keep every worker busy.
const (
	inBuffer  = 8
	outBuffer = 8
)

func newSubtask(chain Chain, opts Options, res Resolved, index int) (*subtask, error) {
	ropts := opts.Runner
	ropts.Calls = chain.Calls
	ropts.InputSchema = chain.InputSchema
	ropts.OutputSchema = chain.OutputSchema
	ropts.Subtask = index
	ropts.Allocator = opts.Allocator
	if ropts.OperatorName == "" {
		ropts.OperatorName = opts.Name
	}
	runner, err := pluginrunner.NewRunner(ropts)
	if err != nil {
		return nil, err
	}
	s := &subtask{
		index:  index,
		runner: runner,
		in:     make(chan arrow.RecordBatch, inBuffer),
		out:    make(chan arrow.RecordBatch, outBuffer),
	}
	s.op, err = bundle.NewOperator(bundle.Options{
		Name:          fmt.Sprintf("udf %q (operator %s, subtask %d)", label(chain), ropts.OperatorName, index),
		BatchSize:     res.BatchSize,
		BundleSize:    opts.BundleSize,
		BundleTime:    opts.BundleTime,
		MaxBatchBytes: ropts.MaxBatchBytes(),
		Allocator:     opts.Allocator,
	}, runner, s.emit)
	if err != nil {
		return nil, err
	}
	return s, nil
}

func (s *subtask) emit(res bridge.Result) error {
	select {
	case s.out <- res.Batch:
		return nil
	case <-s.emitCtx.Done():
		res.Batch.Release()
		return context.Cause(s.emitCtx)
	}
}

// run is the subtask's task goroutine: open, process until the input ends,
// then close in order. On failure or cancel the operator takes its cancel
// path (ShutdownNow, then the runner's Cancel); Close then only frees.
func (s *subtask) run(ctx context.Context) (err error) {
	s.emitCtx = ctx
	defer close(s.out)
	defer func() {
		if err != nil {
			s.op.Cancel(err)
			_ = s.op.Close(ctx)
			s.releaseInput()
		}
	}()
	if err := s.op.Open(ctx); err != nil {
		return err
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		var deadline <-chan time.Time
		if at, ok := s.op.BundleDeadline(); ok {
			timer.Reset(time.Until(at))
			deadline = timer.C
		}
		select {
		case b, ok := <-s.in:
			if !ok {
				return s.op.Close(ctx)
			}
			err := s.op.ProcessBatch(ctx, b)
			b.Release()
			if err != nil {
				return err
			}
		case <-deadline:
			if err := s.op.FinishBundle(ctx); err != nil {
				return err
			}
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// releaseInput frees batches the distributor still hands over after a
// failure, until it closes the channel.
func (s *subtask) releaseInput() {
	go func() {
		for b := range s.in {
			b.Release()
		}
	}()
}
