package chainrun

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"golang.org/x/sync/errgroup"

	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/udf/bridge/pluginrunner"
	"github.com/flinkgo/flinkgo/udf/bridge/proto/workerpb"
)

// Chain is a fused chain of Python UDF calls over one input schema.
type Chain struct {
	// Calls are applied in order; a call may read the outputs of earlier ones.
	Calls []*workerpb.UdfCall
	// InputSchema is the schema of every input batch.
	InputSchema *arrow.Schema
	// OutputSchema selects the result columns; default: every call's output.
	OutputSchema *arrow.Schema
}

// Options tune a run. Zero fields take the chain's own settings (see
// Resolve) or the defaults of packages bundle and pluginrunner.
type Options struct {
	// Parallelism is the number of worker processes when no synchronous UDF
	// of the chain sets concurrency. Default 1.
	Parallelism int
	// BatchSize overrides the global batch size (rows per batch sent to
	// Python) for chains whose UDFs set none. Default plan.DefaultBatchSize.
	BatchSize int
	// BundleSize and BundleTime: see bundle.Options.
	BundleSize int
	BundleTime time.Duration
	// Runner is the template of every worker's options; Calls, InputSchema,
	// OutputSchema, Subtask and Allocator are filled in per subtask.
	Runner pluginrunner.Options
	// Name names the operator in logs and errors. Default "udf-chain".
	Name string
	// Allocator holds every batch the run creates. Default
	// memory.DefaultAllocator.
	Allocator memory.Allocator
}

// Resolved is how a chain runs once the rules of
// docs/semantics.md#concurrency-and-batch-size are applied.
type Resolved struct {
	// Parallelism: the explicit concurrency of the chain's synchronous UDFs,
	// else Options.Parallelism.
	Parallelism int
	// BatchSize: the smallest explicit batch_size of the chain, else
	// Options.BatchSize.
	BatchSize int
}

// Resolve applies the per-UDF concurrency and batch-size rules to a chain.
// Synchronous UDFs with different explicit concurrency cannot share a chain:
// the planner puts them in separate operators.
func Resolve(chain Chain, opts Options) (Resolved, error) {
	var bad []string
	if opts.Parallelism < 0 {
		bad = append(bad, fmt.Sprintf("Parallelism is %d", opts.Parallelism))
	}
	if opts.BatchSize < 0 {
		bad = append(bad, fmt.Sprintf("BatchSize is %d", opts.BatchSize))
	}
	if len(chain.Calls) == 0 || chain.InputSchema == nil {
		bad = append(bad, "the chain needs calls and an input schema")
	}
	if len(bad) > 0 {
		return Resolved{}, fmt.Errorf("chainrun: invalid run of udf %q: %s (zero means the default)", label(chain), strings.Join(bad, "; "))
	}
	res := Resolved{Parallelism: max(opts.Parallelism, 1), BatchSize: opts.BatchSize}
	if res.BatchSize <= 0 {
		res.BatchSize = plan.DefaultBatchSize
	}
	concurrency, owner := 0, ""
	smallest := 0
	for _, c := range chain.Calls {
		spec := c.GetUdf()
		if n := int(spec.GetConcurrency()); n > 0 && !spec.GetIsAsync() {
			if concurrency != 0 && n != concurrency {
				return Resolved{}, fmt.Errorf("chainrun: udf %q (concurrency=%d) and udf %q (concurrency=%d) cannot share a chain: "+
					"UDFs with different concurrency run in separate operators", owner, concurrency, spec.GetName(), n)
			}
			concurrency, owner = n, spec.GetName()
		}
		if n := int(spec.GetBatchSize()); n > 0 && (smallest == 0 || n < smallest) {
			smallest = n
		}
	}
	if concurrency > 0 {
		res.Parallelism = concurrency
	}
	if smallest > 0 {
		res.BatchSize = smallest
	}
	return res, nil
}

// Run runs chain over the batches read from in until in is closed, and calls
// emit with the results in input order: the k-th result row belongs to the
// k-th input row. Result batches need not align with input batches.
//
// Run takes ownership of every batch it reads from in; emit owns each batch
// it is given and must Release it. Run blocks until every worker is gone.
// When ctx ends or anything fails, every worker is canceled (never waited
// on), Run stops reading in (what is left there stays the caller's) and
// returns the first error.
func Run(ctx context.Context, chain Chain, opts Options, in <-chan arrow.RecordBatch, emit func(arrow.RecordBatch) error) error {
	res, err := Resolve(chain, opts)
	if err != nil {
		drain(in)
		return err
	}
	if opts.Name == "" {
		opts.Name = "udf-chain"
	}
	if opts.Allocator == nil {
		opts.Allocator = memory.DefaultAllocator
	}
	g, gctx := errgroup.WithContext(ctx)
	subtasks := make([]*subtask, res.Parallelism)
	for i := range subtasks {
		s, err := newSubtask(chain, opts, res, i)
		if err != nil {
			drain(in)
			return err
		}
		subtasks[i] = s
	}
	m := newMerger(subtasks, emit)
	for _, s := range subtasks {
		g.Go(func() error { return s.run(gctx) })
	}
	g.Go(func() error { return m.run(gctx) })
	g.Go(func() error { return distribute(gctx, in, subtasks, m) })
	err = g.Wait()
	m.release()
	if err != nil {
		return err
	}
	return m.checkComplete()
}

// RunBatches runs chain over batches (ownership stays with the caller) and
// returns the results in input order; the caller releases them.
func RunBatches(ctx context.Context, chain Chain, opts Options, batches []arrow.RecordBatch) ([]arrow.RecordBatch, error) {
	in := make(chan arrow.RecordBatch)
	var out []arrow.RecordBatch
	feedCtx, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		defer close(in)
		for _, b := range batches {
			b.Retain()
			select {
			case in <- b:
			case <-feedCtx.Done():
				b.Release()
				return
			}
		}
	}()
	err := Run(ctx, chain, opts, in, func(b arrow.RecordBatch) error {
		out = append(out, b)
		return nil
	})
	stop()
	drain(in)
	if err != nil {
		for _, b := range out {
			b.Release()
		}
		return nil, err
	}
	return out, nil
}

// distribute hands input batches to subtasks round robin and tells the
// merger each batch's row count, in input order.
func distribute(ctx context.Context, in <-chan arrow.RecordBatch, subtasks []*subtask, m *merger) error {
	defer func() {
		for _, s := range subtasks {
			close(s.in)
		}
		close(m.sizes)
	}()
	next := 0
	for {
		var b arrow.RecordBatch
		var ok bool
		select {
		case b, ok = <-in:
			if !ok {
				return nil
			}
		case <-ctx.Done():
			return context.Cause(ctx)
		}
		if b.NumRows() == 0 {
			b.Release()
			continue
		}
		s := subtasks[next]
		select {
		case m.sizes <- inputSize{subtask: next, rows: b.NumRows()}:
		case <-ctx.Done():
			b.Release()
			return context.Cause(ctx)
		}
		select {
		case s.in <- b:
		case <-ctx.Done():
			b.Release()
			return context.Cause(ctx)
		}
		next = (next + 1) % len(subtasks)
	}
}

// drain releases every batch left in in, so the producer can finish.
func drain(in <-chan arrow.RecordBatch) {
	for b := range in {
		b.Release()
	}
}

// label names a chain's UDFs for error messages.
func label(chain Chain) string {
	names := make([]string, len(chain.Calls))
	for i, c := range chain.Calls {
		names[i] = c.GetUdf().GetName()
	}
	return strings.Join(names, "+")
}

// errIncomplete means the workers answered fewer rows than were sent.
var errIncomplete = errors.New("chainrun: results missing")
