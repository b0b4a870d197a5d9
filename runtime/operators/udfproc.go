package operators

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/bundle"
	"github.com/flinkgo/flinkgo/runtime/checkpoint"
	"github.com/flinkgo/flinkgo/runtime/operator"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/runtime/rowkind"
	"github.com/flinkgo/flinkgo/udf/bridge"
	"github.com/flinkgo/flinkgo/udf/bridge/proto/workerpb"
	"github.com/flinkgo/flinkgo/udf/workerpool"
)

// udfKind runs the Python UDF calls the planner fused into one operator;
// mapBatchesKind a map_batches function, whose results replace the input.
func udfKind(opts Options) operator.Kind {
	return operator.Kind{
		Kind: plan.KindUDF,
		Schema: func(op *plan.Operator, in []*arrow.Schema) (*arrow.Schema, error) {
			return udfSchemas(op, in[0])
		},
		New: func(c *operator.Context) (operator.Operator, error) { return newUDFProc(c, opts) },
	}
}

func mapBatchesKind(opts Options) operator.Kind {
	return operator.Kind{
		Kind: plan.KindMapBatches,
		Schema: func(op *plan.Operator, in []*arrow.Schema) (*arrow.Schema, error) {
			s, err := decodeSchema(op.Node.MapBatches.Function.GetReturnSchema())
			if err != nil {
				return nil, err
			}
			if !op.Node.MapBatches.HandlesRowKinds {
				if rowkind.Has(in[0]) {
					return nil, fmt.Errorf("map_batches %q reads a changelog stream but does not declare that it handles row kinds", op.Name)
				}
				return s, nil
			}
			// A function that handles row kinds returns them as its last
			// column; over an append-only input they are all +I and dropped.
			if !rowkind.Has(s) {
				return nil, fmt.Errorf("map_batches %q handles row kinds but its return schema has no %s column", op.Name, rowkind.Column)
			}
			if !rowkind.Has(in[0]) {
				return rowkind.WithoutColumn(s), nil
			}
			return s, nil
		},
		New: func(c *operator.Context) (operator.Operator, error) { return newUDFProc(c, opts) },
	}
}

// udfProc runs a UDF operator subtask: it sends the UDFs' argument columns
// to a worker through a bundle.Operator and joins each result with the
// input rows it answers (the columns passed through).
type udfProc struct {
	operator.Base
	op *bundle.Operator
	// argCols are the input columns the worker reads, in its input order,
	// and argSchema their schema (the worker's input schema).
	argCols   []int
	argSchema *arrow.Schema
	// out says where each output column comes from: an input column index,
	// or (-1 - i) for result column i.
	out    []int
	schema *arrow.Schema
	// pending holds input batches whose rows still await results, oldest
	// first, and how many rows of the first were answered.
	pending []arrow.RecordBatch
	offset  int64
	// emit is the task's downstream while a call is in progress; results
	// arrive inside ProcessBatch, FinishBundle and Close.
	emit operator.Emit
	ctx  context.Context
	// batchMap: a map_batches function, whose results replace the input.
	batchMap bool
	// rowKinds: a map_batches function that handles row kinds; over an
	// append-only input it gets all +I and must return only +I, which are
	// dropped (appendOnly).
	rowKinds, appendOnly bool
	mem                  memory.Allocator
	name                 string
	// unregister takes the worker pool out of the job's record.
	unregister func()
}

func newUDFProc(c *operator.Context, opts Options) (*udfProc, error) {
	op, in, out, subtask := c.Op, c.Input(), c.Out, c.Subtask
	p := &udfProc{schema: out, mem: c.Allocator, name: op.Name}
	var calls []*workerpb.UdfCall
	var workerIn *arrow.Schema
	if op.Kind == plan.KindMapBatches {
		p.batchMap = true
		calls = []*workerpb.UdfCall{{Udf: op.Node.MapBatches.Function}}
		workerIn = in
		for i := range in.NumFields() {
			p.argCols = append(p.argCols, i)
		}
		p.rowKinds = op.Node.MapBatches.HandlesRowKinds
		if p.rowKinds && !rowkind.Has(in) {
			p.appendOnly, workerIn = true, rowkind.WithColumn(in)
		}
	} else {
		calls = op.UDF.Calls
		var fields []arrow.Field
		for _, name := range op.UDF.InputColumns {
			idx := in.FieldIndices(name)
			if len(idx) == 0 {
				return nil, fmt.Errorf("udf input column %q is not in %s", name, in)
			}
			p.argCols = append(p.argCols, idx[0])
			fields = append(fields, in.Field(idx[0]))
		}
		workerIn = arrow.NewSchema(fields, nil)
		for _, f := range out.Fields() {
			if i := slices.Index(op.UDF.ResultColumns, f.Name); i >= 0 {
				p.out = append(p.out, -1-i)
			} else {
				p.out = append(p.out, in.FieldIndices(f.Name)[0])
			}
		}
	}
	p.argSchema = workerIn
	ropts := opts.Runner
	ropts.Calls = calls
	ropts.InputSchema = workerIn
	ropts.Allocator = c.Allocator
	ropts.OperatorName = op.Name
	ropts.Subtask = subtask
	udfMetrics := c.UDFMetrics()
	ropts.Metrics = udfMetrics
	if !p.batchMap {
		results, err := resultFields(calls)
		if err != nil {
			return nil, err
		}
		fields := make([]arrow.Field, len(op.UDF.ResultColumns))
		for i, name := range op.UDF.ResultColumns {
			fields[i] = results[name]
		}
		ropts.OutputSchema = arrow.NewSchema(fields, nil)
	}
	name := fmt.Sprintf("%q (uid %s, subtask %d)", op.Name, op.UID, subtask)
	// The subtask's workers form a pool that a rescale resizes in place
	// (a UDF operator keeps no state); results leave in input order.
	pool, err := workerpool.New(workerpool.Options{
		Name:     name,
		Workers:  c.Workers.Start(op.UID, subtask, c.Parallelism),
		New:      func(int) (bridge.Runner, error) { return opts.NewRunner(ropts) },
		Logger:   c.Logger,
		OnRetire: udfMetrics.WorkerRetired,
	})
	if err != nil {
		return nil, err
	}
	p.unregister = c.Workers.Register(op.UID, subtask, pool)
	p.op, err = bundle.NewOperator(bundle.Options{
		Name:          name,
		BatchSize:     op.BatchSize,
		BundleSize:    opts.BundleSize,
		BundleTime:    opts.BundleTime,
		MaxBatchBytes: ropts.MaxBatchBytes(),
		Allocator:     c.Allocator,
	}, pool, p.onResult)
	if err != nil {
		p.unregister()
		return nil, err
	}
	return p, nil
}

func (p *udfProc) Open(ctx context.Context) error { return p.op.Open(ctx) }

func (p *udfProc) with(ctx context.Context, emit operator.Emit, f func() error) error {
	p.ctx, p.emit = ctx, emit
	defer func() { p.ctx, p.emit = nil, nil }()
	return f()
}

func (p *udfProc) Process(ctx context.Context, _ int, b arrow.RecordBatch, emit operator.Emit) error {
	args := make([]arrow.Array, len(p.argCols))
	for i, c := range p.argCols {
		args[i] = b.Column(c)
	}
	var argBatch arrow.RecordBatch
	if p.appendOnly {
		// A function that handles row kinds gets them: all +I here.
		values := array.NewRecordBatch(rowkind.WithoutColumn(p.argSchema), args, b.NumRows())
		withKinds, err := rowkind.AttachConstant(p.mem, values, rowkind.Insert)
		values.Release()
		if err != nil {
			return err
		}
		argBatch = withKinds
	} else {
		argBatch = array.NewRecordBatch(p.argSchema, args, b.NumRows())
	}
	defer argBatch.Release()
	if !p.batchMap {
		b.Retain()
		p.pending = append(p.pending, b)
	}
	return p.with(ctx, emit, func() error { return p.op.ProcessBatch(ctx, argBatch) })
}

// onResult joins a result with the input rows it answers and emits it.
func (p *udfProc) onResult(res bridge.Result) error {
	if p.batchMap && p.rowKinds {
		return p.emitWithKinds(res.Batch)
	}
	if p.batchMap {
		return p.emit(p.ctx, res.Batch)
	}
	defer res.Batch.Release()
	rows := res.Batch.NumRows()
	for rows > 0 {
		if len(p.pending) == 0 {
			return fmt.Errorf("udf returned %d rows more than it was sent", rows)
		}
		head := p.pending[0]
		n := min(rows, head.NumRows()-p.offset)
		results := res.Batch.NewSlice(res.Batch.NumRows()-rows, res.Batch.NumRows()-rows+n)
		cols := make([]arrow.Array, len(p.out))
		for i, src := range p.out {
			if src < 0 {
				cols[i] = results.Column(-1 - src)
				cols[i].Retain()
			} else {
				cols[i] = array.NewSlice(head.Column(src), p.offset, p.offset+n)
			}
		}
		out := array.NewRecordBatch(p.schema, cols, n)
		for _, c := range cols {
			c.Release()
		}
		results.Release()
		p.offset += n
		rows -= n
		if p.offset == head.NumRows() {
			head.Release()
			p.pending, p.offset = p.pending[1:], 0
		}
		if err := p.emit(p.ctx, out); err != nil {
			return err
		}
	}
	return nil
}

func (p *udfProc) Finish(ctx context.Context, emit operator.Emit) error {
	return p.with(ctx, emit, func() error { return p.op.Close(ctx) })
}

func (p *udfProc) Deadline() (time.Time, bool) { return p.op.BundleDeadline() }

func (p *udfProc) OnTimer(ctx context.Context, emit operator.Emit) error {
	return p.with(ctx, emit, func() error { return p.op.FinishBundle(ctx) })
}

func (p *udfProc) Cancel(cause error) { p.op.Cancel(cause) }

func (p *udfProc) Release() {
	p.unregister()
	_ = p.op.Close(context.Background()) // after cancel: frees only
	for _, b := range p.pending {
		b.Release()
	}
	p.pending = nil
}

// SnapshotState finishes the bundle in flight before the barrier moves on
// (docs/semantics.md#bundles): every result of a row before the barrier is emitted
// before it. A UDF operator keeps no other state.
func (p *udfProc) SnapshotState(ctx context.Context, _ checkpoint.Target, emit operator.Emit, _ *checkpoint.SubtaskState) error {
	return p.with(ctx, emit, func() error { return p.op.FinishBundle(ctx) })
}

// OnWatermark holds the watermark until the bundle in flight is finished,
// as PyFlink does: the results of every row before the watermark are
// emitted before it goes on (docs/semantics.md#bundles).
func (p *udfProc) OnWatermark(ctx context.Context, wm operator.Watermark, emit operator.Emit) (operator.Watermark, error) {
	if err := p.with(ctx, emit, func() error { return p.op.FinishBundle(ctx) }); err != nil {
		return wm, err
	}
	return wm, nil
}

// emitWithKinds emits the result of a map_batches function that handles
// row kinds: its kinds must be row kinds, and only +I over an append-only
// input (whose output has no row-kind column).
func (p *udfProc) emitWithKinds(b arrow.RecordBatch) error {
	if err := rowkind.Validate(b); err != nil {
		b.Release()
		return fmt.Errorf("map_batches %q returned a bad %s column: %w", p.name, rowkind.Column, err)
	}
	if !p.appendOnly {
		return p.emit(p.ctx, b)
	}
	defer b.Release()
	values, kinds := rowkind.Strip(b)
	if kinds != nil {
		defer kinds.Release()
		for row := range kinds.Len() {
			if k := rowkind.At(kinds, row); k != rowkind.Insert {
				values.Release()
				return fmt.Errorf("map_batches %q returned a %s row over an append-only input: only +I rows can come out of it", p.name, k)
			}
		}
	}
	return p.emit(p.ctx, values)
}
