package operators

import (
	"bytes"
	"container/heap"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"

	"github.com/flinkgo/flinkgo/internal/arrowipc"
	"github.com/flinkgo/flinkgo/runtime/checkpoint"
	"github.com/flinkgo/flinkgo/runtime/operator"
	"github.com/flinkgo/flinkgo/runtime/partition"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/runtime/watermark"
	"github.com/flinkgo/flinkgo/state"
)

// intervalJoinKind joins two keyed inputs on equal keys and event times
// within bounds, as Flink's IntervalJoinOperator: a left row at time t
// matches the right rows of its key at times in [t+lower, t+upper]. Both
// sides buffer their rows; a row goes when the watermark passes the last
// time a row of the other side could still match it (Flink's cleanup
// timers: t+max(0, upper) for the left, t+max(0, -lower) for the right),
// and an outer side emits it then, padded with nulls, if it never matched.
// Rows later than the watermark are dropped, as Flink does, and counted,
// or with late_rows=KEEP sent to their side's late-rows output (Flink's
// sideOutputLeftLateData / sideOutputRightLateData).
//
// The buffers are held in memory (the input batches themselves) and are
// keyed state: each checkpoint writes the buffers of the keys that changed
// since the last one into the Pebble backend (one value per key: both
// sides' rows as Arrow IPC, with their matched flags), as the other keyed
// operators do, so a restore, at any parallelism, loads its key groups'
// rows back; cleanup times follow from the rows' times.
func intervalJoinKind(opts Options) operator.Kind {
	return operator.Kind{
		Kind:   plan.KindIntervalJoin,
		Schema: intervalJoinSchema,
		State:  operator.StateDescriptor{Keyed: true, What: "the rows of both sides that may still match"},
		New: func(c *operator.Context) (operator.Operator, error) {
			return newIntervalJoin(c, opts)
		},
	}
}

// matchedColumn holds a stored row's matched flag in a snapshot.
const matchedColumn = "__flinkgo_matched"

// intervalJoinSchema is the left columns then the right ones, a right name
// that is also a left one suffixed with "_right"; every column is nullable
// (outer joins pad with nulls).
func intervalJoinSchema(op *plan.Operator, in []*arrow.Schema) (*arrow.Schema, error) {
	if len(in) != 2 {
		return nil, fmt.Errorf("interval_join has %d inputs, needs 2", len(in))
	}
	seen := map[string]bool{}
	var fields []arrow.Field
	for _, f := range in[0].Fields() {
		seen[f.Name] = true
		f.Nullable = true
		fields = append(fields, f)
	}
	for _, f := range in[1].Fields() {
		if seen[f.Name] {
			f.Name += "_right"
			if seen[f.Name] {
				return nil, fmt.Errorf("interval_join: the right column %q would be renamed %q, which is also a column; rename one first", f.Name[:len(f.Name)-len("_right")], f.Name)
			}
		}
		seen[f.Name] = true
		f.Nullable = true
		fields = append(fields, f)
	}
	return arrow.NewSchema(fields, nil), nil
}

// joinSide is how one input's rows are read.
type joinSide struct {
	name    string // "left" or "right", for messages
	keys    []int
	time    int
	timeMul int64 // the time column's unit in nanoseconds
	outer   bool  // emit its unmatched rows padded
	// cleanupAfter is how long after a row's time a row of the other
	// side can still match it (0 when the bound is behind it).
	cleanupAfter int64
}

// heldBatch is an input batch some of whose rows are buffered.
type heldBatch struct {
	rec  arrow.RecordBatch
	side int
	live int // buffered rows
}

// bufRow is one buffered row.
type bufRow struct {
	batch     *heldBatch
	row       int
	ts        int64 // nanoseconds
	cleanupMs int64 // the watermark at which it goes
	matched   bool
}

// keyBuffer is the buffered rows of one key, by side.
type keyBuffer struct {
	group int // the key's key group
	rows  [2][]*bufRow
}

type intervalJoin struct {
	operator.Base
	c            *operator.Context
	side         [2]joinSide
	lower, upper int64 // nanoseconds
	out          *arrow.Schema
	buffers      map[string]*keyBuffer
	cleanup      cleanupQueue
	wm           int64
	hasWM        bool
	late         int64
	// lateRows emits each side's rows behind the watermark on its
	// late-rows output (late_rows=KEEP and an edge reads them); nil: they
	// are dropped and counted in late.
	lateRows [2]operator.Emit
	keyBuf   []byte
	// keyed is the Pebble backend; dirty the keys (and their key
	// groups) whose buffers changed since the last checkpoint.
	keyed keyedState
	dirty map[string]int
}

func newIntervalJoin(c *operator.Context, opts Options) (operator.Operator, error) {
	j, err := configureIntervalJoin(c)
	if err != nil {
		return nil, err
	}
	if c.Keyed == nil {
		return nil, errors.New("interval_join: no keyed state context")
	}
	if err := j.keyed.setup(context.Background(), c, "interval-join-rows", opts.KeyedCacheGroups); err != nil {
		j.Release()
		return nil, err
	}
	if j.keyed.backend != nil { // restored
		if err := j.load(); err != nil {
			j.Release()
			return nil, fmt.Errorf("interval_join: restoring the buffered rows: %w", err)
		}
	}
	return j, nil
}

func configureIntervalJoin(c *operator.Context) (*intervalJoin, error) {
	spec := c.Op.Node.IntervalJoin
	if len(c.In) != 2 {
		return nil, fmt.Errorf("interval_join has %d inputs, needs 2", len(c.In))
	}
	j := &intervalJoin{c: c, lower: spec.LowerNs, upper: spec.UpperNs, out: c.Out,
		buffers: map[string]*keyBuffer{}, dirty: map[string]int{}}
	if spec.LateRows == plan.KeepLateRows {
		copy(j.lateRows[:], c.LateRows)
	}
	how := spec.How
	j.side[0] = joinSide{name: "left", outer: how.OuterLeft(), cleanupAfter: max(0, j.upper)}
	j.side[1] = joinSide{name: "right", outer: how.OuterRight(), cleanupAfter: max(0, -j.lower)}
	keyNames := [2][]string{spec.LeftKeys, spec.RightKeys}
	timeNames := [2]string{spec.LeftTime, spec.RightTime}
	if len(keyNames[0]) == 0 || len(keyNames[0]) != len(keyNames[1]) {
		return nil, fmt.Errorf("interval_join needs as many left keys as right keys, at least one; it has %v and %v", keyNames[0], keyNames[1])
	}
	for s := range 2 {
		in := c.In[s]
		for _, name := range keyNames[s] {
			idx := in.FieldIndices(name)
			if len(idx) == 0 {
				return nil, fmt.Errorf("interval_join: %s key %q is not a column of %s", j.side[s].name, name, in)
			}
			j.side[s].keys = append(j.side[s].keys, idx[0])
		}
		idx := in.FieldIndices(timeNames[s])
		if len(idx) == 0 {
			return nil, fmt.Errorf("interval_join: %s time column %q is not a column of %s", j.side[s].name, timeNames[s], in)
		}
		ts, ok := in.Field(idx[0]).Type.(*arrow.TimestampType)
		if !ok {
			return nil, fmt.Errorf("interval_join: %s time column %q is %s, not a timestamp", j.side[s].name, timeNames[s], in.Field(idx[0]).Type)
		}
		j.side[s].time, j.side[s].timeMul = idx[0], int64(ts.Unit.Multiplier())
	}
	for i := range j.side[0].keys {
		l, r := c.In[0].Field(j.side[0].keys[i]), c.In[1].Field(j.side[1].keys[i])
		if !arrow.TypeEqual(l.Type, r.Type) {
			return nil, fmt.Errorf("interval_join: left key %q is %s but right key %q is %s; cast one so both have one type", l.Name, l.Type, r.Name, r.Type)
		}
	}
	return j, nil
}

// floorMs is nanoseconds as event-time milliseconds (rounded down).
func floorMs(ns int64) int64 {
	ms := ns / 1e6
	if ns%1e6 < 0 {
		ms--
	}
	return ms
}

// pairs are the matches of rows of the batch being processed with
// buffered rows of one held batch of the other side.
type pairs struct{ this, other []int64 }

func (j *intervalJoin) Process(ctx context.Context, input int, b arrow.RecordBatch, emit operator.Emit) error {
	if input != 0 && input != 1 {
		return fmt.Errorf("interval_join: input %d, only 0 (left) and 1 (right) exist", input)
	}
	side := &j.side[input]
	other := 1 - input
	n := int(b.NumRows())
	times := b.Column(side.time).(*array.Timestamp)
	var unjoinable []int64 // null key or time: never match
	var late []int64       // behind the watermark, kept
	matches := map[*heldBatch]*pairs{}
	var held *heldBatch
	var groups []int32 // the rows' key groups, computed at the first buffered row
	for row := range n {
		if times.IsNull(row) || j.nullKey(b, side.keys, row) {
			if side.outer {
				unjoinable = append(unjoinable, int64(row))
			}
			continue
		}
		ts := int64(times.Value(row)) * side.timeMul
		if j.hasWM && floorMs(ts) < j.wm {
			// As Flink: a row behind the watermark is dropped, or sent
			// to its side's late-rows output.
			if j.lateRows[input] != nil {
				late = append(late, int64(row))
			} else {
				j.late++
			}
			continue
		}
		j.keyBuf = j.keyBuf[:0]
		for _, k := range side.keys {
			j.keyBuf = appendKey(j.keyBuf, b.Column(k), row)
		}
		buf := j.buffers[string(j.keyBuf)]
		if buf == nil {
			if groups == nil {
				var err error
				if groups, err = partition.KeyGroups(b, side.keys, j.c.MaxParallelism); err != nil {
					return fmt.Errorf("interval_join: %w", err)
				}
			}
			buf = &keyBuffer{group: int(groups[row])}
			j.buffers[string(j.keyBuf)] = buf
		}
		j.dirty[string(j.keyBuf)] = buf.group
		// A left row at t matches right rows in [t+lower, t+upper]; a
		// right row at t matches left rows in [t-upper, t-lower].
		lo, hi := ts+j.lower, ts+j.upper
		if input == 1 {
			lo, hi = ts-j.upper, ts-j.lower
		}
		matched := false
		for _, o := range buf.rows[other] {
			if o.ts < lo || o.ts > hi {
				continue
			}
			o.matched, matched = true, true
			p := matches[o.batch]
			if p == nil {
				p = &pairs{}
				matches[o.batch] = p
			}
			p.this = append(p.this, int64(row))
			p.other = append(p.other, int64(o.row))
		}
		if held == nil {
			b.Retain()
			held = &heldBatch{rec: b, side: input}
		}
		held.live++
		r := &bufRow{batch: held, row: row, ts: ts, cleanupMs: floorMs(ts + side.cleanupAfter), matched: matched}
		buf.rows[input] = append(buf.rows[input], r)
		j.cleanup.add(r.cleanupMs, string(j.keyBuf))
	}
	if len(late) > 0 {
		rows, err := takeRows(ctx, b, late)
		if err != nil {
			return fmt.Errorf("interval_join: %s late rows: %w", side.name, err)
		}
		if err := j.lateRows[input](ctx, rows); err != nil {
			return err
		}
	}
	for o, p := range matches {
		if err := j.emitPairs(ctx, input, b, p.this, o.rec, p.other, emit); err != nil {
			return err
		}
	}
	if len(unjoinable) > 0 {
		return j.emitPadded(ctx, input, b, unjoinable, emit)
	}
	return nil
}

func (j *intervalJoin) nullKey(b arrow.RecordBatch, keys []int, row int) bool {
	for _, k := range keys {
		if b.Column(k).IsNull(row) {
			return true
		}
	}
	return false
}

// emitPairs emits this[i] of b (of side input) joined with other[i] of o.
func (j *intervalJoin) emitPairs(ctx context.Context, input int, b arrow.RecordBatch, this []int64, o arrow.RecordBatch, other []int64, emit operator.Emit) error {
	thisRows, err := takeRows(ctx, b, this)
	if err != nil {
		return err
	}
	defer thisRows.Release()
	otherRows, err := takeRows(ctx, o, other)
	if err != nil {
		return err
	}
	defer otherRows.Release()
	left, right := thisRows, otherRows
	if input == 1 {
		left, right = otherRows, thisRows
	}
	cols := append(append([]arrow.Array{}, left.Columns()...), right.Columns()...)
	return emit(ctx, array.NewRecordBatch(j.out, cols, int64(len(this))))
}

// emitPadded emits rows of b (of side input) with nulls for the other side.
func (j *intervalJoin) emitPadded(ctx context.Context, input int, b arrow.RecordBatch, rows []int64, emit operator.Emit) error {
	taken, err := takeRows(ctx, b, rows)
	if err != nil {
		return err
	}
	defer taken.Release()
	mem := compute.GetAllocator(ctx)
	otherSchema := j.c.In[1-input]
	nulls := make([]arrow.Array, otherSchema.NumFields())
	for i, f := range otherSchema.Fields() {
		nulls[i] = array.MakeArrayOfNull(mem, f.Type, len(rows))
	}
	defer func() {
		for _, a := range nulls {
			a.Release()
		}
	}()
	var cols []arrow.Array
	if input == 0 {
		cols = append(append(cols, taken.Columns()...), nulls...)
	} else {
		cols = append(append(cols, nulls...), taken.Columns()...)
	}
	return emit(ctx, array.NewRecordBatch(j.out, cols, int64(len(rows))))
}

func takeRows(ctx context.Context, b arrow.RecordBatch, rows []int64) (arrow.RecordBatch, error) {
	ib := array.NewInt64Builder(compute.GetAllocator(ctx))
	defer ib.Release()
	ib.AppendValues(rows, nil)
	idx := ib.NewArray()
	defer idx.Release()
	values, indices := compute.NewDatum(b), compute.NewDatum(idx) // both retain
	defer values.Release()
	defer indices.Release()
	d, err := compute.Take(ctx, *compute.DefaultTakeOptions(), values, indices)
	if err != nil {
		return nil, fmt.Errorf("taking rows: %w", err)
	}
	return d.(*compute.RecordDatum).Value, nil
}

// OnWatermark drops the rows the watermark has passed the cleanup time of
// (Flink's cleanup timers fire when timestamp <= watermark), emitting the
// unmatched ones of an outer side, then forwards the watermark held back
// by the join's reach, max(upper, -lower), as Flink's SQL interval join
// does (KeyedCoProcessOperatorWithWatermarkDelay): a row padded when its
// cleanup time passes is then not behind the watermark that follows it.
func (j *intervalJoin) OnWatermark(ctx context.Context, wm operator.Watermark, emit operator.Emit) (operator.Watermark, error) {
	j.wm, j.hasWM = int64(wm), true
	if err := j.expire(ctx, func(r *bufRow) bool { return r.cleanupMs <= j.wm }, emit); err != nil {
		return wm, err
	}
	if wm == watermark.MaxWatermark {
		return wm, nil
	}
	delay := floorMs(max(j.side[0].cleanupAfter, j.side[1].cleanupAfter) + 999_999) // rounded up
	if int64(wm) < math.MinInt64+delay {
		return operator.Watermark(math.MinInt64), nil
	}
	return wm - operator.Watermark(delay), nil
}

// Finish expires every buffered row: no input is left to match them.
func (j *intervalJoin) Finish(ctx context.Context, emit operator.Emit) error {
	if err := j.expire(ctx, func(*bufRow) bool { return true }, emit); err != nil {
		return err
	}
	if j.late > 0 {
		j.c.Logger.Warn("interval_join dropped rows behind the watermark, as Flink does", "rows", j.late)
	}
	return nil
}

func (j *intervalJoin) expire(ctx context.Context, due func(*bufRow) bool, emit operator.Emit) error {
	padded := map[*heldBatch][]int64{}
	sweep := func(key string) {
		buf := j.buffers[key]
		if buf == nil {
			return
		}
		changed := false
		for s := range 2 {
			kept := buf.rows[s][:0]
			for _, r := range buf.rows[s] {
				if !due(r) {
					kept = append(kept, r)
					continue
				}
				changed = true
				if !r.matched && j.side[s].outer {
					padded[r.batch] = append(padded[r.batch], int64(r.row))
				} else {
					j.drop(r.batch)
				}
			}
			clear(buf.rows[s][len(kept):])
			buf.rows[s] = kept
		}
		if changed {
			j.dirty[key] = buf.group
		}
		if len(buf.rows[0]) == 0 && len(buf.rows[1]) == 0 {
			delete(j.buffers, key)
		}
	}
	for len(j.cleanup.times) > 0 {
		at := j.cleanup.times[0]
		if !due(&bufRow{cleanupMs: at}) {
			break
		}
		heap.Pop(&j.cleanup.times)
		for _, key := range j.cleanup.keys[at] {
			sweep(key)
		}
		delete(j.cleanup.keys, at)
	}
	var err error
	for h, rows := range padded {
		if err == nil {
			err = j.emitPadded(ctx, h.side, h.rec, rows, emit)
		}
		for range rows {
			j.drop(h)
		}
	}
	return err
}

// drop forgets one buffered row of h, releasing h with its last one.
func (j *intervalJoin) drop(h *heldBatch) {
	h.live--
	if h.live == 0 {
		h.rec.Release()
		h.rec = nil
	}
}

// SnapshotState writes the buffers of the keys that changed since the last
// checkpoint (or clears them when empty) and snapshots the backend;
// TakePersist hands over the writing out.
func (j *intervalJoin) SnapshotState(ctx context.Context, target checkpoint.Target, _ operator.Emit, _ *checkpoint.SubtaskState) error {
	if err := j.keyed.open(); err != nil {
		return err
	}
	ctx = compute.WithAllocator(ctx, j.c.Allocator)
	for key, group := range j.dirty {
		k := state.Key{Group: group, Bytes: []byte(key)}
		buf := j.buffers[key]
		if buf == nil {
			if err := j.keyed.values.Clear(k); err != nil {
				return err
			}
			continue
		}
		value, err := j.encode(ctx, buf)
		if err != nil {
			return fmt.Errorf("interval_join: storing the rows of a key: %w", err)
		}
		if err := j.keyed.values.Put(k, value); err != nil {
			return err
		}
	}
	clear(j.dirty)
	return j.keyed.snapshot(target)
}

func (j *intervalJoin) TakePersist() func(context.Context, *checkpoint.SubtaskState) error {
	return j.keyed.takePersist()
}

// encode stores a key's rows: for each side a length and an Arrow IPC
// stream of its rows with their matched flags (length 0: no rows).
func (j *intervalJoin) encode(ctx context.Context, buf *keyBuffer) ([]byte, error) {
	var out []byte
	for s := range 2 {
		if len(buf.rows[s]) == 0 {
			out = binary.AppendUvarint(out, 0)
			continue
		}
		rec, err := j.gather(ctx, s, buf.rows[s])
		if err != nil {
			return nil, err
		}
		var enc bytes.Buffer
		err = arrowipc.EncodeBatch(&enc, rec, j.c.Allocator)
		rec.Release()
		if err != nil {
			return nil, err
		}
		out = binary.AppendUvarint(out, uint64(enc.Len()))
		out = append(out, enc.Bytes()...)
	}
	return out, nil
}

// gather makes one batch of rows (of side s) and their matched flags.
func (j *intervalJoin) gather(ctx context.Context, s int, rows []*bufRow) (arrow.RecordBatch, error) {
	mem := j.c.Allocator
	in := j.c.In[s]
	byBatch := map[*heldBatch][]int64{}
	flags := map[*heldBatch][]bool{}
	var order []*heldBatch
	for _, r := range rows {
		if _, ok := byBatch[r.batch]; !ok {
			order = append(order, r.batch)
		}
		byBatch[r.batch] = append(byBatch[r.batch], int64(r.row))
		flags[r.batch] = append(flags[r.batch], r.matched)
	}
	parts := make([][]arrow.Array, in.NumFields())
	defer func() {
		for _, col := range parts {
			for _, a := range col {
				a.Release()
			}
		}
	}()
	matched := array.NewBooleanBuilder(mem)
	defer matched.Release()
	for _, h := range order {
		taken, err := takeRows(ctx, h.rec, byBatch[h])
		if err != nil {
			return nil, err
		}
		for i, col := range taken.Columns() {
			col.Retain()
			parts[i] = append(parts[i], col)
		}
		taken.Release()
	}
	for _, h := range order { // the flags in the order the rows were taken
		matched.AppendValues(flags[h], nil)
	}
	cols := make([]arrow.Array, 0, in.NumFields()+1)
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	for _, col := range parts {
		joined, err := array.Concatenate(col, mem)
		if err != nil {
			return nil, err
		}
		cols = append(cols, joined)
	}
	cols = append(cols, matched.NewArray())
	fields := append(slices.Clone(in.Fields()), arrow.Field{Name: matchedColumn, Type: arrow.FixedWidthTypes.Boolean})
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, int64(len(rows))), nil
}

// load reads the restored backend's rows (those of the subtask's key
// groups) back into the buffers.
func (j *intervalJoin) load() error {
	return j.keyed.values.ForEach(func(k state.Key, v []byte) error {
		buf := &keyBuffer{group: k.Group}
		key := string(k.Bytes)
		for s := range 2 {
			n, read := binary.Uvarint(v)
			if read <= 0 || uint64(len(v)-read) < n {
				return fmt.Errorf("a stored value of %d bytes is truncated", len(v))
			}
			data := v[read : read+int(n)]
			v = v[read+int(n):]
			if n == 0 {
				continue
			}
			rec, err := arrowipc.DecodeBatch(data, j.c.Allocator)
			if err != nil {
				return err
			}
			if err := j.restoreRows(key, buf, s, rec); err != nil {
				rec.Release()
				return err
			}
			rec.Release()
		}
		j.buffers[key] = buf
		return nil
	})
}

func (j *intervalJoin) restoreRows(key string, buf *keyBuffer, s int, rec arrow.RecordBatch) error {
	in := j.c.In[s]
	if int(rec.NumCols()) != in.NumFields()+1 {
		return fmt.Errorf("the %s rows have %d columns, the input has %d (the job's schema changed)", j.side[s].name, rec.NumCols()-1, in.NumFields())
	}
	for i, f := range in.Fields() {
		if !arrow.TypeEqual(rec.Column(i).DataType(), f.Type) {
			return fmt.Errorf("the stored %s column %q is %s, the input's is %s (the job's schema changed)", j.side[s].name, f.Name, rec.Column(i).DataType(), f.Type)
		}
	}
	n := int(rec.NumRows())
	side := &j.side[s]
	h := &heldBatch{rec: array.NewRecordBatch(in, rec.Columns()[:in.NumFields()], int64(n)), side: s, live: n}
	times := rec.Column(side.time).(*array.Timestamp)
	matched := rec.Column(in.NumFields()).(*array.Boolean)
	for row := range n {
		ts := int64(times.Value(row)) * side.timeMul
		r := &bufRow{batch: h, row: row, ts: ts, cleanupMs: floorMs(ts + side.cleanupAfter), matched: matched.Value(row)}
		buf.rows[s] = append(buf.rows[s], r)
		j.cleanup.add(r.cleanupMs, key)
	}
	return nil
}

// Release frees the buffered batches and the backend.
func (j *intervalJoin) Release() {
	for key, buf := range j.buffers {
		for s := range 2 {
			for _, r := range buf.rows[s] {
				j.drop(r.batch)
			}
		}
		delete(j.buffers, key)
	}
	j.cleanup = cleanupQueue{}
	j.keyed.release()
}

// cleanupQueue is the join's cleanup timers, deduplicated by time and key
// as Flink's timer service does: a heap of the distinct cleanup times and,
// for each, the keys to sweep then.
type cleanupQueue struct {
	times timeHeap
	keys  map[int64][]string
}

func (q *cleanupQueue) add(at int64, key string) {
	keys, ok := q.keys[at]
	if !ok {
		if q.keys == nil {
			q.keys = map[int64][]string{}
		}
		heap.Push(&q.times, at)
	}
	if n := len(keys); n > 0 && keys[n-1] == key {
		return // the same key again (rows of a key come in runs)
	}
	q.keys[at] = append(keys, key)
}

type timeHeap []int64

func (h timeHeap) Len() int           { return len(h) }
func (h timeHeap) Less(a, b int) bool { return h[a] < h[b] }
func (h timeHeap) Swap(a, b int)      { h[a], h[b] = h[b], h[a] }
func (h *timeHeap) Push(x any)        { *h = append(*h, x.(int64)) }
func (h *timeHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
