package operators

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/internal/arrowipc"
	"github.com/flinkgo/flinkgo/runtime/operator"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/udf/bridge"
	"github.com/flinkgo/flinkgo/udf/bridge/proto/workerpb"
)

// pandasUDAFs runs the pandas UDAFs of a window aggregation, or of a keyed
// aggregation of a bounded input (docs/semantics.md#pandas-udafs). A pandas
// UDAF is not incremental, so every group (a window's slice or session, a
// key) keeps its rows' argument columns (udafRows), and a firing window
// (or the end of input) hands the kept rows to a worker. The rows of many
// groups go in one batch, a group column numbering them, and the worker
// answers one row per group: one call for many groups, never one per group.
type pandasUDAFs struct {
	// aggs are the indexes in windowProc.aggs of the UDAF aggregates, in
	// the order of the worker's calls and result columns.
	aggs []int
	// cols are the input columns the UDAFs read (each once), kept per row
	// in keptSchema; workerIn is the group column, then keptSchema.
	cols       []int
	keptSchema *arrow.Schema
	workerIn   *arrow.Schema
	results    *arrow.Schema
	mem        memory.Allocator
	// runners are the UDAFs' workers: the largest concurrency of the
	// UDAFs, one when none gives it. Batches go round-robin.
	runners   []bridge.Runner
	seqs      []int64
	next      int // the worker the next batch goes to
	batchRows int
	maxBytes  int64
	closed    bool
	name      string

	// per batch, reused
	slotOf  map[*udafRows]int32
	order   []*udafRows
	rowSlot []int32
	counts  []int64
	indices []int64
}

// udafRows are the rows a group keeps for the pandas UDAFs (their argument
// columns), with their estimated size.
type udafRows struct {
	batches []arrow.RecordBatch
	bytes   int64
}

func (r *udafRows) rows() int64 {
	var n int64
	for _, b := range r.batches {
		n += b.NumRows()
	}
	return n
}

// release frees the rows once their group is gone.
func (r *udafRows) release() {
	releaseAll(r.batches)
	r.batches, r.bytes = nil, 0
}

// addRetained adds o's rows to r, retained (o keeps its own).
func (r *udafRows) addRetained(o *udafRows) {
	for _, b := range o.batches {
		b.Retain()
		r.batches = append(r.batches, b)
	}
	r.bytes += o.bytes
}

// moveFrom moves o's rows to r (merged sessions).
func (r *udafRows) moveFrom(o *udafRows) {
	r.batches, r.bytes = append(r.batches, o.batches...), r.bytes+o.bytes
	o.batches, o.bytes = nil, 0
}

// newPandasUDAFs prepares the UDAFs of aggs (nil when there are none);
// their workers start in open. offset is the output column of aggs[0].
func newPandasUDAFs(c *operator.Context, opts Options, aggs []*plan.Aggregate, offset int) (*pandasUDAFs, error) {
	in := c.Input()
	u := &pandasUDAFs{mem: c.Allocator, slotOf: map[*udafRows]int32{},
		name: fmt.Sprintf("%q (uid %s, subtask %d)", c.Op.Name, c.Op.UID, c.Subtask)}
	var calls []*workerpb.UdfCall
	var results []arrow.Field
	var kept []arrow.Field
	concurrency := 1
	for i, a := range aggs {
		if a.Function != plan.UDAFFunction {
			continue
		}
		spec := a.UDF
		if spec == nil || spec.GetFuncType() != workerpb.FuncType_FUNC_TYPE_PANDAS_AGGREGATE {
			return nil, fmt.Errorf("aggregate %q: a udaf needs a pandas aggregate function spec", a.Name)
		}
		for _, arg := range a.Args {
			idx := in.FieldIndices(arg)
			if len(idx) == 0 {
				return nil, fmt.Errorf("aggregate %q: udaf %q: the argument column %q is not a column of the input (%s)", a.Name, spec.GetName(), arg, in)
			}
			if !slices.Contains(u.cols, idx[0]) {
				u.cols = append(u.cols, idx[0])
				kept = append(kept, in.Field(idx[0]))
			}
		}
		rs, err := decodeSchema(spec.GetReturnSchema())
		if err != nil || rs.NumFields() != 1 {
			return nil, fmt.Errorf("aggregate %q: udaf %q: return_schema is not an Arrow schema with one field", a.Name, spec.GetName())
		}
		if want := c.Out.Field(offset + i).Type; !arrow.TypeEqual(rs.Field(0).Type, want) {
			return nil, fmt.Errorf("aggregate %q: udaf %q returns %s, but the declared output column is %s", a.Name, spec.GetName(), rs.Field(0).Type, want)
		}
		results = append(results, arrow.Field{Name: a.Name, Type: rs.Field(0).Type, Nullable: true})
		calls = append(calls, &workerpb.UdfCall{Udf: spec, Args: a.Args, Output: a.Name})
		u.aggs = append(u.aggs, i)
		concurrency = max(concurrency, int(spec.GetConcurrency()))
	}
	if len(calls) == 0 {
		return nil, nil
	}
	u.keptSchema = arrow.NewSchema(kept, nil)
	u.workerIn = arrow.NewSchema(append([]arrow.Field{{Name: bridge.GroupColumn, Type: arrow.PrimitiveTypes.Int32}}, kept...), nil)
	u.results = arrow.NewSchema(results, nil)
	u.batchRows = c.Op.BatchSize
	if u.batchRows <= 0 {
		u.batchRows = plan.DefaultBatchSize
	}
	ropts := opts.Runner
	ropts.Calls = calls
	ropts.InputSchema = u.workerIn
	ropts.OutputSchema = u.results
	ropts.Allocator = c.Allocator
	ropts.OperatorName = c.Op.Name
	ropts.Subtask = c.Subtask
	ropts.Metrics = c.UDFMetrics()
	u.maxBytes = ropts.MaxBatchBytes()
	for range concurrency {
		r, err := opts.NewRunner(ropts)
		if err != nil {
			u.cancel()
			return nil, err
		}
		u.runners = append(u.runners, r)
	}
	u.seqs = make([]int64, len(u.runners))
	return u, nil
}

func (u *pandasUDAFs) open(ctx context.Context) error {
	for _, r := range u.runners {
		if err := r.Open(ctx); err != nil {
			return err
		}
	}
	return nil
}

// close ends the workers in order (end of input).
func (u *pandasUDAFs) close() error {
	if u.closed {
		return nil
	}
	u.closed = true
	var errs []error
	for _, r := range u.runners {
		errs = append(errs, r.Close())
	}
	return errors.Join(errs...)
}

// cancel stops the workers without waiting on them; safe from any
// goroutine.
func (u *pandasUDAFs) cancel() {
	for _, r := range u.runners {
		bridge.CancelRunner(r)
	}
}

// keep appends the argument columns of b's rows to the groups they went
// to (groups[row], nil for a dropped row): one take per batch, each group
// a slice of it.
func (u *pandasUDAFs) keep(ctx context.Context, b arrow.RecordBatch, groups []*udafRows) error {
	clear(u.slotOf)
	u.order, u.counts = u.order[:0], u.counts[:0]
	u.rowSlot = slices.Grow(u.rowSlot[:0], len(groups))[:len(groups)]
	var total int64
	for row, s := range groups {
		if s == nil {
			u.rowSlot[row] = -1
			continue
		}
		i, ok := u.slotOf[s]
		if !ok {
			i = int32(len(u.order))
			u.slotOf[s] = i
			u.order = append(u.order, s)
			u.counts = append(u.counts, 0)
		}
		u.rowSlot[row] = i
		u.counts[i]++
		total++
	}
	if total == 0 {
		return nil
	}
	// Counting sort of the rows by slot, in arrival order within a slot.
	offsets := make([]int64, len(u.order)+1)
	for i, n := range u.counts {
		offsets[i+1] = offsets[i] + n
	}
	u.indices = slices.Grow(u.indices[:0], int(total))[:total]
	next := slices.Clone(offsets[:len(u.order)])
	for row, i := range u.rowSlot {
		if i >= 0 {
			u.indices[next[i]] = int64(row)
			next[i]++
		}
	}
	cols := make([]arrow.Array, len(u.cols))
	for i, c := range u.cols {
		cols[i] = b.Column(c)
	}
	args := array.NewRecordBatch(u.keptSchema, cols, b.NumRows())
	defer args.Release()
	taken, err := takeRows(compute.WithAllocator(ctx, u.mem), args, u.indices)
	if err != nil {
		return fmt.Errorf("keeping the rows of a pandas UDAF: %w", err)
	}
	defer taken.Release()
	perRow := bytesPerRow(taken)
	for i, s := range u.order {
		s.batches = append(s.batches, taken.NewSlice(offsets[i], offsets[i+1]))
		s.bytes += perRow * (offsets[i+1] - offsets[i])
	}
	return nil
}

// bytesPerRow estimates a row's size in a compact batch.
func bytesPerRow(b arrow.RecordBatch) int64 {
	if b.NumRows() == 0 {
		return 0
	}
	var total int64
	for _, c := range b.Columns() {
		for _, buf := range c.Data().Buffers() {
			if buf != nil {
				total += int64(buf.Len())
			}
		}
		for _, child := range c.Data().Children() {
			for _, buf := range child.Buffers() {
				if buf != nil {
					total += int64(buf.Len())
				}
			}
		}
	}
	return (total + b.NumRows() - 1) / b.NumRows()
}

// evaluate computes the UDAFs of groups, returning one column per UDAF
// aligned with groups. The rows of many groups share a
// batch of at most batchRows rows and maxBytes bytes (a larger group goes
// alone; with n workers, a firing of enough groups is cut into n batches
// or more); batches
// go round-robin to the workers, all sent before the results are taken, so
// the workers run side by side.
func (u *pandasUDAFs) evaluate(ctx context.Context, rows []*udafRows) ([]arrow.Array, error) {
	type chunk struct{ from, to int }
	var chunks []chunk
	// With several workers, a firing of enough groups is cut into as many
	// batches or more, so that they all work on it.
	limit, total := int64(u.batchRows), int64(0)
	for _, r := range rows {
		total += r.rows()
	}
	if n := int64(len(u.runners)); n > 1 {
		limit = max(1, min(limit, (total+n-1)/n))
	}
	from, chunkRows, chunkBytes := 0, int64(0), int64(0)
	for i, r := range rows {
		n, bytes := r.rows(), r.bytes
		if n == 0 {
			return nil, fmt.Errorf("%s: internal error: a group has no rows kept for its pandas UDAFs", u.name)
		}
		if i > from && (chunkRows+n > limit || chunkBytes+bytes > u.maxBytes) {
			chunks = append(chunks, chunk{from, i})
			from, chunkRows, chunkBytes = i, 0, 0
		}
		chunkRows += n
		chunkBytes += bytes
	}
	chunks = append(chunks, chunk{from, len(rows)})
	for j, ch := range chunks {
		batch, err := u.batch(rows[ch.from:ch.to])
		if err != nil {
			return nil, err
		}
		r := (u.next + j) % len(u.runners)
		err = u.runners[r].Process(ctx, u.seqs[r], batch)
		u.seqs[r]++
		batch.Release()
		if err != nil {
			return nil, u.describe(err)
		}
	}
	parts := make([][]arrow.Array, len(u.aggs))
	defer func() {
		for _, p := range parts {
			releaseAll(p)
		}
	}()
	for j, ch := range chunks {
		res, err := u.runners[(u.next+j)%len(u.runners)].TakeResult(ctx)
		if err != nil {
			return nil, u.describe(err)
		}
		if got, want := res.Batch.NumRows(), int64(ch.to-ch.from); got != want {
			res.Batch.Release()
			return nil, fmt.Errorf("%s: the pandas UDAFs answered %d rows for %d groups", u.name, got, want)
		}
		for i := range u.aggs {
			col := res.Batch.Column(i)
			col.Retain()
			parts[i] = append(parts[i], col)
		}
		res.Batch.Release()
	}
	u.next = (u.next + len(chunks)) % len(u.runners)
	out := make([]arrow.Array, len(u.aggs))
	for i, p := range parts {
		if len(p) == 1 {
			p[0].Retain()
			out[i] = p[0]
			continue
		}
		col, err := array.Concatenate(p, u.mem)
		if err != nil {
			releaseAll(out[:i])
			return nil, err
		}
		out[i] = col
	}
	return out, nil
}

func (u *pandasUDAFs) describe(err error) error {
	return fmt.Errorf("%s: pandas UDAF: %w", u.name, err)
}

// batch makes the worker's input for rows: the group column, then their
// kept rows, window after window.
func (u *pandasUDAFs) batch(rows []*udafRows) (arrow.RecordBatch, error) {
	groups := array.NewInt32Builder(u.mem)
	defer groups.Release()
	var n int64
	parts := make([][]arrow.Array, len(u.cols))
	for g, r := range rows {
		for _, k := range r.batches {
			for i := range parts {
				parts[i] = append(parts[i], k.Column(i))
			}
			for range k.NumRows() {
				groups.Append(int32(g))
			}
			n += k.NumRows()
		}
	}
	cols := make([]arrow.Array, 0, 1+len(u.cols))
	defer func() { releaseAll(cols) }()
	cols = append(cols, groups.NewArray())
	for _, p := range parts {
		col, err := array.Concatenate(p, u.mem)
		if err != nil {
			return nil, fmt.Errorf("gathering the rows of a pandas UDAF: %w", err)
		}
		cols = append(cols, col)
	}
	return array.NewRecordBatch(u.workerIn, cols, n), nil
}

// releaseSlot frees a slot's kept rows once it is gone.
func releaseSlot(s *winSlot) { s.kept.release() }

func releaseSlots(slots []*winSlot) {
	for _, s := range slots {
		releaseSlot(s)
	}
}

// appendKept appends a group's kept rows to its keyed state value: a
// length and one Arrow IPC stream (length 0: no rows).
func (u *pandasUDAFs) appendKept(buf []byte, r *udafRows) ([]byte, error) {
	kept := r.batches
	if r.rows() == 0 {
		return binary.AppendUvarint(buf, 0), nil
	}
	cols := make([]arrow.Array, len(u.cols))
	defer func() { releaseAll(cols) }()
	parts := make([]arrow.Array, len(kept))
	for i := range cols {
		for j, k := range kept {
			parts[j] = k.Column(i)
		}
		col, err := array.Concatenate(parts, u.mem)
		if err != nil {
			return nil, err
		}
		cols[i] = col
	}
	rec := array.NewRecordBatch(u.keptSchema, cols, r.rows())
	defer rec.Release()
	var enc bytes.Buffer
	if err := arrowipc.EncodeBatch(&enc, rec, u.mem); err != nil {
		return nil, err
	}
	buf = binary.AppendUvarint(buf, uint64(enc.Len()))
	return append(buf, enc.Bytes()...), nil
}

// readKept reads what appendKept wrote into s.
func (u *pandasUDAFs) readKept(r *groupReader, s *udafRows) error {
	data := []byte(r.string()) // a copy: the batch points into it
	if r.err != nil || len(data) == 0 {
		return r.err
	}
	rec, err := arrowipc.DecodeBatch(data, u.mem)
	if err != nil {
		return fmt.Errorf("the rows kept for the pandas UDAFs: %w", err)
	}
	if !rec.Schema().Equal(u.keptSchema) {
		rec.Release()
		return fmt.Errorf("the rows kept for the pandas UDAFs are %s, the UDAFs read %s (the job's schema changed)", rec.Schema(), u.keptSchema)
	}
	s.batches, s.bytes = []arrow.RecordBatch{rec}, int64(len(data))
	return nil
}
