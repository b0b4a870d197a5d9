package bundle

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flinkgo/flinkgo/udf/bridge"
)

// processBatch splits b at the bundle boundary, re-batches it, sends the
// completed batches and ends the bundle on size or time, without waiting for
// its results (endBundle).
func (o *Operator) processBatch(ctx context.Context, b arrow.RecordBatch) error {
	n := b.NumRows()
	for off := int64(0); off < n; {
		take := min(n-off, int64(o.opts.BundleSize-o.bundleRows))
		piece := b
		if take != n {
			piece = b.NewSlice(off, off+take)
		}
		if o.bundleRows == 0 {
			o.bundleStart = o.opts.Now()
		}
		out, err := o.reb.Add(piece)
		if piece != b {
			piece.Release()
		}
		if err != nil {
			return err
		}
		o.bundleRows += int(take)
		off += take
		if err := o.sendAll(ctx, out); err != nil {
			return err
		}
		if o.bundleRows >= o.opts.BundleSize {
			if err := o.endBundle(ctx); err != nil {
				return err
			}
		}
	}
	if deadline, ok := o.openDeadline(); ok && !o.opts.Now().Before(deadline) {
		return o.endBundle(ctx)
	}
	return nil
}

// sendAll sends batches to the runner with the next sequence numbers and
// releases them, emitting the results already available after each: the
// results of a large input leave as they come back, not after its last
// batch was sent, so downstream operators (and the row counts of the
// job's progress) see the UDF's progress, and the runner's queue stays
// short.
func (o *Operator) sendAll(ctx context.Context, batches []arrow.RecordBatch) error {
	defer releaseAll(batches)
	if len(batches) == 0 {
		return nil
	}
	o.mu.Lock()
	runner, err := o.runnerLocked()
	o.mu.Unlock()
	if err != nil {
		return err
	}
	for _, b := range batches {
		if err := runner.Process(ctx, o.nextSeq, b); err != nil {
			return fromRunner(err)
		}
		o.nextSeq++
		o.unflushed++
		if err := o.emitAvailable(runner); err != nil {
			return err
		}
	}
	return nil
}

// emitAvailable emits the results queued now, without waiting for more.
func (o *Operator) emitAvailable(runner bridge.Runner) error {
	for {
		res, ok, err := runner.TryTakeResult()
		if err != nil {
			return fromRunner(err)
		}
		if !ok {
			return nil
		}
		if err := o.emitResult(res); err != nil {
			return err
		}
	}
}

// emitResult passes res on, checking it is the next one in input order.
func (o *Operator) emitResult(res bridge.Result) error {
	if res.Seq != o.nextEmit {
		if res.Batch != nil {
			res.Batch.Release()
		}
		return fmt.Errorf("runner returned the result of batch %d while batch %d was next: results must come in input order", res.Seq, o.nextEmit)
	}
	o.nextEmit++
	o.finishEnded()
	if err := o.emit(res); err != nil {
		return fmt.Errorf("emit result of batch %d: %w", res.Seq, err)
	}
	return nil
}
