package pipeline

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/connectors/builtin"
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
		return nil, Resolved{}, fmt.Errorf("pipeline: invalid run of udf %q: %s (zero means the default)", label(chain), strings.Join(bad, "; "))
	}
	p := max(opts.Parallelism, 1)
	for {
		g, err := planAt(chain, opts, p, plan.Options{})
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
			return nil, Resolved{}, fmt.Errorf("pipeline: udf %q (concurrency=%d) and udf %q (concurrency=%d) cannot share a chain: "+
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
func planAt(chain Chain, opts Options, p int, popts plan.Options) (*plan.Graph, error) {
	if popts.Connectors == nil {
		popts.Connectors = builtin.Registry()
	}
	schema, err := arrowipc.EncodeSchema(chain.InputSchema)
	if err != nil {
		return nil, err
	}
	exprs := map[string]plan.Expr{}
	var outputs []string
	for i, c := range chain.Calls {
		output := c.GetOutput()
		if output == "" {
			// Resolve may be asked about specs alone: name the result.
			output = fmt.Sprintf("result_%d", i)
		}
		args := make([]plan.Expr, len(c.GetArgs()))
		for i, a := range c.GetArgs() {
			if e, ok := exprs[a]; ok {
				args[i] = e // an earlier call's output: nested, the planner fuses it
			} else {
				args[i] = &plan.Column{Name: a}
			}
		}
		exprs[output] = &plan.UDFCall{UDF: c.GetUdf(), Args: args}
		outputs = append(outputs, output)
	}
	if chain.OutputSchema != nil {
		outputs = outputs[:0]
		for _, f := range chain.OutputSchema.Fields() {
			outputs = append(outputs, f.Name)
		}
	}
	var columns []*plan.NamedExpr
	for _, name := range outputs {
		e, ok := exprs[name]
		if !ok {
			e = &plan.Column{Name: name}
		}
		columns = append(columns, &plan.NamedExpr{Name: name, Expr: e})
	}
	name := opts.Name
	if name == "" {
		name = "udf-chain"
	}
	config := map[string]string{}
	if opts.BatchSize > 0 {
		config[plan.ConfigBatchSize] = strconv.Itoa(opts.BatchSize)
	}
	return plan.Plan(&plan.JobPlan{Name: name, Config: config, Nodes: []*plan.Node{
		{ID: 1, UID: "input", Name: "input", Parallelism: p, OutputSchema: schema, Kind: plan.KindSource,
			Source: &plan.Source{Config: &planpb.Source{Kind: &planpb.Source_Arrow{Arrow: &planpb.ArrowSource{}}}}},
		{ID: 2, UID: chainUID, Name: label(chain), Parallelism: p, Inputs: []*plan.Input{{Node: 1}},
			Kind: plan.KindSelect, Select: &plan.Select{Columns: columns}},
		{ID: 3, UID: "results", Name: "results", Parallelism: p, Inputs: []*plan.Input{{Node: 2}}, Kind: plan.KindSink,
			Sink: &plan.Sink{Config: &planpb.Sink{Kind: &planpb.Sink_Collect{Collect: &planpb.CollectSink{}}}}},
	}}, popts)
}

// chainUID is the uid of the chain's node.
const chainUID = "chain"

// Run runs chain over the batches read from in until in is closed, and calls
// emit with the results in input order: the k-th result row belongs to the
// k-th input row. Result batches need not align with input batches.
//
// The chain runs on the runtime (package job) as one task: the source
// reading in, the runtime's UDF operator over a pool of Resolve's
// parallelism in workers (results in input order), and a collect sink
// calling emit, from one goroutine at a time.
//
// Run takes ownership of every batch it reads from in; emit owns each batch
// it is given and must Release it. Run blocks until every worker is gone.
// When ctx ends or anything fails (emit's error included), every worker is
// canceled (never waited on), Run stops reading in (what is left there
// stays the caller's) and returns the first error.
func Run(ctx context.Context, chain Chain, opts Options, in <-chan arrow.RecordBatch, emit func(arrow.RecordBatch) error) error {
	g, err := planRun(chain, opts)
	if err != nil {
		drain(in)
		return err
	}
	if opts.Allocator == nil {
		opts.Allocator = memory.DefaultAllocator
	}
	collect := func(_ *plan.Operator, _ int, b arrow.RecordBatch) error {
		if err := emit(b); err != nil {
			return fmt.Errorf("pipeline: emit: %w", err)
		}
		return nil
	}
	reg, err := operators.Registry(operators.Options{
		Runner: opts.Runner, BundleSize: opts.BundleSize, BundleTime: opts.BundleTime, Collect: collect,
	}).With(channelSource(chain.InputSchema, in))
	if err != nil {
		drain(in)
		return err
	}
	j, err := job.Start(ctx, g.graph, job.Options{Allocator: opts.Allocator, Registry: reg, Workers: map[string]int{g.udfUID: g.workers}})
	if err != nil {
		drain(in)
		return err
	}
	_, err = j.Wait()
	return err
}

// runGraph is how Run runs a chain: one subtask of every operator, the
// UDF operator (uid udfUID) with a pool of workers.
type runGraph struct {
	graph   *plan.Graph
	udfUID  string
	workers int
}

// planRun plans the chain as Resolve does, then again with every operator
// at one subtask (the chain's node rescaled to 1, as an in-place rescale
// leaves it) to run Resolve's parallelism as workers of that subtask.
func planRun(chain Chain, opts Options) (runGraph, error) {
	_, res, err := planChain(chain, opts)
	if err != nil {
		return runGraph{}, err
	}
	g, err := planAt(chain, opts, 1, plan.Options{Parallelism: map[string]int{chainUID: 1}})
	if err != nil {
		return runGraph{}, err
	}
	for _, op := range g.Operators {
		if op.Kind == plan.KindUDF {
			return runGraph{graph: g, udfUID: op.UID, workers: res.Parallelism}, nil
		}
	}
	return runGraph{}, fmt.Errorf("pipeline: udf %q: the plan has no UDF operator", label(chain))
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
