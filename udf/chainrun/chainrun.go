package chainrun

import (
	"context"
	"errors"
	"fmt"
	"github.com/flinkgo/flinkgo/connectors/builtin"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/internal/arrowipc"
	"github.com/flinkgo/flinkgo/runtime/job"
	"github.com/flinkgo/flinkgo/runtime/operators"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
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
	// Python) for chains whose UDFs set none. Default bundle.DefaultBatchSize (the planner's).
	BatchSize int
	// BundleSize and BundleTime: see bundle.Options.
	BundleSize int
	BundleTime time.Duration
	// Runner is the template of every worker's options; Calls, InputSchema,
	// OutputSchema, Subtask and Allocator are filled in per subtask.
	Runner pluginrunner.Options
	// Name names the job in errors. Default "udf-chain".
	Name string
	// Allocator holds every batch the run creates. Default
	// memory.DefaultAllocator.
	Allocator memory.Allocator
}

// Resolved is how a chain runs once the planner's rules are applied.
type Resolved struct {
	// Parallelism: the explicit concurrency of the chain's synchronous UDFs,
	// else Options.Parallelism.
	Parallelism int
	// BatchSize: the smallest explicit batch_size of the chain, else
	// Options.BatchSize.
	BatchSize int
}

// Resolve plans the chain as the runtime does (package plan: the per-UDF
// concurrency and batch-size rules) and says how it runs. Synchronous UDFs
// with different explicit concurrency cannot share a chain: the planner
// puts them in separate operators.
func Resolve(chain Chain, opts Options) (Resolved, error) {
	_, res, err := planChain(chain, opts)
	return res, err
}

// planChain plans source → the chain's UDF operator → collect sink, every
// operator at the UDF operator's parallelism (so each subtask is one task
// and keeps its input's order).
func planChain(chain Chain, opts Options) (*plan.Graph, Resolved, error) {
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
		return nil, Resolved{}, fmt.Errorf("chainrun: invalid run of udf %q: %s (zero means the default)", label(chain), strings.Join(bad, "; "))
	}
	p := max(opts.Parallelism, 1)
	for {
		g, err := planAt(chain, opts, p)
		if err != nil {
			return nil, Resolved{}, err
		}
		var udfs []*plan.Operator
		for _, op := range g.Operators {
			if op.Kind == plan.KindUDF {
				udfs = append(udfs, op)
			}
		}
		if len(udfs) > 1 {
			a, b := udfs[0].UDF, udfs[1].UDF
			return nil, Resolved{}, fmt.Errorf("chainrun: udf %q (concurrency=%d) and udf %q (concurrency=%d) cannot share a chain: "+
				"UDFs with different concurrency run in separate operators",
				a.Calls[0].GetUdf().GetName(), a.Concurrency, b.Calls[0].GetUdf().GetName(), b.Concurrency)
		}
		udf := udfs[0]
		if udf.Parallelism == p {
			return g, Resolved{Parallelism: p, BatchSize: udf.BatchSize}, nil
		}
		p = udf.Parallelism // the UDFs' concurrency: plan every operator at it
	}
}

// planAt plans the chain with every node at parallelism p.
func planAt(chain Chain, opts Options, p int) (*plan.Graph, error) {
	schema, err := arrowipc.EncodeSchema(chain.InputSchema)
	if err != nil {
		return nil, err
	}
	exprs := map[string]*planpb.Expr{}
	var outputs []string
	for i, c := range chain.Calls {
		output := c.GetOutput()
		if output == "" {
			// Resolve may be asked about specs alone: name the result.
			output = fmt.Sprintf("result_%d", i)
		}
		args := make([]*planpb.Expr, len(c.GetArgs()))
		for i, a := range c.GetArgs() {
			if e, ok := exprs[a]; ok {
				args[i] = e // an earlier call's output: nested, the planner fuses it
			} else {
				args[i] = &planpb.Expr{Kind: &planpb.Expr_Column{Column: a}}
			}
		}
		exprs[output] = &planpb.Expr{Kind: &planpb.Expr_Udf{Udf: &planpb.UdfExpr{Udf: c.GetUdf(), Args: args}}}
		outputs = append(outputs, output)
	}
	if chain.OutputSchema != nil {
		outputs = outputs[:0]
		for _, f := range chain.OutputSchema.Fields() {
			outputs = append(outputs, f.Name)
		}
	}
	var columns []*planpb.NamedExpr
	for _, name := range outputs {
		e, ok := exprs[name]
		if !ok {
			e = &planpb.Expr{Kind: &planpb.Expr_Column{Column: name}}
		}
		columns = append(columns, &planpb.NamedExpr{Name: name, Expr: e})
	}
	name := opts.Name
	if name == "" {
		name = "udf-chain"
	}
	config := map[string]string{}
	if opts.BatchSize > 0 {
		config[plan.ConfigBatchSize] = strconv.Itoa(opts.BatchSize)
	}
	par := int32(p)
	return plan.Plan(&planpb.JobPlan{Name: name, Config: config, Nodes: []*planpb.Node{
		{Id: 1, Uid: "input", Name: "input", Parallelism: par, OutputSchema: schema,
			Kind: &planpb.Node_Source{Source: &planpb.Source{Kind: &planpb.Source_Arrow{Arrow: &planpb.ArrowSource{}}}}},
		{Id: 2, Uid: "chain", Name: label(chain), Parallelism: par, Inputs: []*planpb.Input{{Node: 1}},
			Kind: &planpb.Node_Select{Select: &planpb.Select{Columns: columns}}},
		{Id: 3, Uid: "results", Name: "results", Parallelism: par, Inputs: []*planpb.Input{{Node: 2}},
			Kind: &planpb.Node_Sink{Sink: &planpb.Sink{Kind: &planpb.Sink_Collect{Collect: &planpb.CollectSink{}}}}},
	}}, plan.Options{Connectors: builtin.Registry()})
}

// Run runs chain over the batches read from in until in is closed, and calls
// emit with the results in input order: the k-th result row belongs to the
// k-th input row. Result batches need not align with input batches.
//
// The chain runs on the runtime (package job): per subtask one task reading
// its share of in (round robin), the runtime's UDF operator, and a collect
// sink; a merger restores input order across subtasks.
//
// Run takes ownership of every batch it reads from in; emit owns each batch
// it is given and must Release it. Run blocks until every worker is gone.
// When ctx ends or anything fails, every worker is canceled (never waited
// on), Run stops reading in (what is left there stays the caller's) and
// returns the first error.
func Run(ctx context.Context, chain Chain, opts Options, in <-chan arrow.RecordBatch, emit func(arrow.RecordBatch) error) error {
	g, res, err := planChain(chain, opts)
	if err != nil {
		drain(in)
		return err
	}
	if opts.Allocator == nil {
		opts.Allocator = memory.DefaultAllocator
	}
	// The job's ctx ends with the caller's or on a merger failure, never by
	// stopping: under the run's own ctx, which stopping cancels as the job
	// fails, the job could end canceled by errJobStopping instead of with
	// its failure.
	jobCtx, cancelJob := context.WithCancelCause(ctx)
	defer cancelJob(nil)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	subtasks := make([]*subtask, res.Parallelism)
	for i := range subtasks {
		subtasks[i] = &subtask{in: make(chan arrow.RecordBatch, inBuffer), out: make(chan arrow.RecordBatch, outBuffer)}
	}
	collect := func(_ *plan.Operator, i int, b arrow.RecordBatch) error {
		select {
		case subtasks[i].out <- b:
			return nil
		case <-ctx.Done():
			b.Release()
			return context.Cause(ctx)
		}
	}
	reg, err := operators.Registry(operators.Options{
		Runner: opts.Runner, BundleSize: opts.BundleSize, BundleTime: opts.BundleTime, Collect: collect,
	}).With(channelSource(chain.InputSchema, subtasks))
	if err != nil {
		drain(in)
		return err
	}
	// A task blocked in collect (its subtask's results wait for the merger,
	// which waits for another subtask) sees only ctx: once the job fails or
	// is canceled, ctx ends too, or that task would never stop and the job
	// never end.
	stopping := func(c job.StateChange) {
		if c.State == job.Failing || c.State == job.Canceling {
			cancel(errJobStopping)
		}
	}
	j, err := job.Start(jobCtx, g, job.Options{Allocator: opts.Allocator, Registry: reg, OnStateChange: stopping})
	if err != nil {
		drain(in)
		return err
	}
	m := newMerger(subtasks, emit)
	merged := make(chan error, 1)
	go func() {
		err := m.run(ctx)
		// errJobStopping only echoes the job's own end: canceling the job
		// with it would hide the job's failure.
		if err != nil && !errors.Is(err, errJobStopping) {
			cancel(err)
			cancelJob(err)
		}
		merged <- err
	}()
	distributed := make(chan error, 1)
	go func() { distributed <- distribute(ctx, in, subtasks, m) }()
	_, runErr := j.Wait()
	if runErr != nil {
		cancel(runErr)
	}
	distErr := <-distributed
	for _, s := range subtasks {
		close(s.out) // every task has ended: nothing sends any more
		s.releaseInput()
	}
	mergeErr := <-merged
	m.release()
	switch {
	case mergeErr != nil && !errors.Is(mergeErr, context.Canceled) && !errors.Is(mergeErr, runErr) && !errors.Is(mergeErr, errJobStopping):
		return mergeErr
	case runErr != nil:
		return runErr
	case distErr != nil:
		return distErr
	case mergeErr != nil:
		return mergeErr
	}
	return m.checkComplete()
}

// errJobStopping ends a run's own goroutines once its job fails or is
// canceled; Run reports the job's error, never this one.
var errJobStopping = errors.New("chainrun: the job is failing or canceled")

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
