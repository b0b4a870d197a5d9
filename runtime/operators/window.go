package operators

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sort"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/runtime/operator"
	"github.com/flinkgo/flinkgo/runtime/partition"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/runtime/window"
	"github.com/flinkgo/flinkgo/state"
)

// windowAggregateKind aggregates the rows of event-time windows, per key
// (docs/semantics.md#windows).
func windowAggregateKind(opts Options) operator.Kind {
	return operator.Kind{
		Kind: plan.KindWindowAggregate,
		Schema: func(op *plan.Operator, in []*arrow.Schema) (*arrow.Schema, error) {
			w := op.Node.WindowAggregate
			if len(in) == 1 {
				if _, err := windowTimeColumn(in[0], w.TimeColumn); err != nil {
					return nil, err
				}
			}
			return decodeSchema(op.OutputSchema)
		},
		State: operator.StateDescriptor{Keyed: true, What: "per key: the window slices (or sessions) in flight with their partial aggregates, and event-time timers"},
		New: func(c *operator.Context) (operator.Operator, error) {
			p, err := newWindowProc(c, opts)
			if err != nil {
				return nil, err
			}
			if err := p.setupState(context.Background(), c, opts.KeyedCacheGroups); err != nil {
				p.Release()
				return nil, err
			}
			return p, nil
		},
	}
}

// windowTimeColumn finds the window's time column, which must be a timestamp.
func windowTimeColumn(in *arrow.Schema, name string) (int, error) {
	idx := in.FieldIndices(name)
	if len(idx) == 0 {
		return 0, fmt.Errorf("window: the time column %q is not a column of the input (%s)", name, in)
	}
	if t := in.Field(idx[0]).Type; t.ID() != arrow.TIMESTAMP {
		return 0, fmt.Errorf("window: the time column %q is %s, not a timestamp; convert it first "+
			"(e.g. with_column(%q, col(%q).cast(\"timestamp[ms]\")))", name, t, name, name)
	}
	return idx[0], nil
}

// windowProc is the window aggregation (Flink's WindowOperator rules with
// the slicing of its table runtime's window aggregate):
//
//   - tumble, hop and cumulate rows go to one slice (pane) each, holding
//     partial aggregates, so a row costs the same whatever size/slide is; a
//     window is the merge of its slices when it fires;
//   - session rows open [ts, ts+gap), merged per key by a MergingSet;
//   - a window fires when the watermark reaches its end - 1 (an event-time
//     timer per key and window in the state backend) and is cleaned up at
//     end - 1 + allowed lateness; a row for a window that fired and is not
//     cleaned up updates it and fires it again; a row too late for every
//     window is dropped and counted (numLateRecordsDropped), or, with
//     late_rows=KEEP, sent unchanged to the late-rows output (Flink's
//     sideOutputLateData).
//
// Keys live in memory as a cache of the keyed state (windowstate.go): a
// checkpoint writes the changed ones into the Pebble backend, which also
// holds the timers, so the windows survive failover and rescale by key
// group.
type windowProc struct {
	operator.Base
	keys    []int
	aggs    []aggSpec
	timeCol int
	// toMillis converts the time column's values to ms (nil: they are ms).
	toMillis func(int64) int64
	slicer   window.Slicer
	session  window.Session
	sessions bool
	lateness int64
	schema   *arrow.Schema
	mem      memory.Allocator
	maxP     int
	dropped  *atomic.Int64
	// lateRows emits the rows too late for every window on the late-rows
	// output (late_rows=KEEP and an edge reads them), nil: they are
	// dropped and counted.
	lateRows operator.Emit
	// udafs runs the pandas UDAFs, nil when there are none.
	udafs *pandasUDAFs

	// index maps an encoded key to its windows in memory.
	index  map[string]*winKey
	keyBuf []byte
	kgs    []int32
	keyed  keyedState
	timers *state.TimerService
	wm     int64
	// deleted are keys with no window left that the backend may hold.
	deleted map[string]state.Key

	// per batch, reused
	ts      []int64
	slots   []*winSlot
	targets []*accumulator
	merges  []slotMerge
	refire  []refire
	idle    []*winKey // keys that took no row in the batch, maybe empty
	// late is set by assignSlice and assignSession for a row too late for
	// every window; lateIdx are the batch's such rows.
	late    bool
	lateIdx []int64
	// out are the window rows to emit.
	out []winRow
}

// winKey is one key's windows in flight.
type winKey struct {
	key      []string // ValueStr of each key column, "" when null
	null     []bool
	stateKey state.Key
	// slots: slices (tumble, hop, cumulate: Window is the slice) or
	// sessions' state windows.
	slots    []*winSlot
	sessions *window.MergingSet
	dirty    bool
}

// winSlot is a slice or a session's partial aggregates.
type winSlot struct {
	w    window.Window
	rows int64
	acc  []accumulator
	// kept are the rows for the pandas UDAFs (none without).
	kept udafRows
}

type slotMerge struct{ from, to *winSlot }

type refire struct {
	k *winKey
	w window.Window
}

type winRow struct {
	k          *winKey
	start, end int64
	acc        []accumulator
	// kept are the window's rows for the pandas UDAFs (retained).
	kept udafRows
}

// Timer namespaces: what fires, then the window (8-byte end; sessions the
// start too). Fire sorts before cleanup at the same time and key.
const (
	nsFire    = 1
	nsCleanup = 2
)

func newWindowProc(c *operator.Context, opts Options) (*windowProc, error) {
	spec := c.Op.Node.WindowAggregate
	in, out := c.Input(), c.Out
	assigner, err := plan.WindowAssigner(spec)
	if err != nil {
		return nil, err
	}
	p := &windowProc{schema: out, mem: c.Allocator, maxP: c.MaxParallelism, dropped: &c.Counters.LateRecordsDropped,
		index: map[string]*winKey{}, deleted: map[string]state.Key{}, wm: math.MinInt64, lateness: spec.AllowedLatenessMs}
	if spec.LateRows == plan.KeepLateRows && len(c.LateRows) > 0 {
		p.lateRows = c.LateRows[0] // nil when nothing reads them: dropped and counted
	}
	if p.session, p.slicer, err = splitAssigner(assigner); err != nil {
		return nil, err
	}
	p.sessions = p.slicer == nil
	if p.timeCol, err = windowTimeColumn(in, spec.TimeColumn); err != nil {
		return nil, err
	}
	if unit := in.Field(p.timeCol).Type.(*arrow.TimestampType).Unit; unit != arrow.Millisecond {
		p.toMillis = toMillis(unit)
	}
	for _, k := range spec.Keys {
		idx := in.FieldIndices(k)
		if len(idx) == 0 {
			return nil, fmt.Errorf("window key %q is not a column of %s", k, in)
		}
		p.keys = append(p.keys, idx[0])
	}
	for _, a := range spec.Aggregates {
		if a.Function == plan.UDAFFunction {
			p.aggs = append(p.aggs, aggSpec{fn: plan.UDAFFunction, column: -1})
			continue
		}
		s, err := parseAggSpec(a, in, windowAggregateFunctions)
		if err != nil {
			return nil, fmt.Errorf("window: %w", err)
		}
		p.aggs = append(p.aggs, s)
	}
	if out.NumFields() != len(p.keys)+2+len(p.aggs) {
		return nil, fmt.Errorf("window: declared schema %s does not have %d keys, window_start, window_end and %d aggregates", out, len(p.keys), len(p.aggs))
	}
	for _, i := range []int{len(p.keys), len(p.keys) + 1} {
		if t, ok := out.Field(i).Type.(*arrow.TimestampType); !ok || t.Unit != arrow.Millisecond {
			return nil, fmt.Errorf("window: declared output column %s must be timestamp[ms]", out.Field(i))
		}
	}
	if p.udafs, err = newPandasUDAFs(c, opts, spec.Aggregates, len(p.keys)+2); err != nil {
		return nil, err
	}
	return p, nil
}

// times returns the rows' event times in ms (floor), refusing nulls.
func (p *windowProc) times(b arrow.RecordBatch) ([]int64, error) {
	col, ok := b.Column(p.timeCol).(*array.Timestamp)
	if !ok {
		return nil, fmt.Errorf("window: the time column %q is %s, not a timestamp", b.ColumnName(p.timeCol), b.Column(p.timeCol).DataType())
	}
	n := col.Len()
	if cap(p.ts) < n {
		p.ts = make([]int64, n)
	}
	ts := p.ts[:n]
	if col.NullN() > 0 {
		for row := range n {
			if col.IsNull(row) {
				return nil, fmt.Errorf("window: the time column %q is null in a row; a row's event time must be set: "+
					"filter out or fill the nulls before the window", b.ColumnName(p.timeCol))
			}
		}
	}
	for row, v := range col.TimestampValues() {
		ts[row] = int64(v)
	}
	if p.toMillis != nil {
		for row, v := range ts {
			ts[row] = p.toMillis(v)
		}
	}
	return ts, nil
}

func (p *windowProc) Process(ctx context.Context, _ int, b arrow.RecordBatch, emit operator.Emit) error {
	ts, err := p.times(b)
	if err != nil {
		return err
	}
	n := len(ts)
	if cap(p.slots) < n {
		p.slots = make([]*winSlot, n)
		p.targets = make([]*accumulator, n)
	}
	slots, targets := p.slots[:n], p.targets[:n]
	keyCols := make([]arrow.Array, len(p.keys))
	for i, k := range p.keys {
		keyCols[i] = b.Column(k)
	}
	p.kgs = nil
	p.merges, p.refire, p.lateIdx = p.merges[:0], p.refire[:0], p.lateIdx[:0]
	var k *winKey
	for row := range n {
		if k, err = p.keyOf(b, keyCols, row, k); err != nil {
			return err
		}
		var slot *winSlot
		if p.sessions {
			slot, err = p.assignSession(k, ts[row])
		} else {
			slot, err = p.assignSlice(k, ts[row])
		}
		if err != nil {
			return err
		}
		slots[row] = slot
		if p.late {
			p.late = false
			p.lateIdx = append(p.lateIdx, int64(row))
		}
		if slot != nil {
			slot.rows++
			k.dirty = true
		} else if len(k.slots) == 0 {
			p.idle = append(p.idle, k) // a new key with late rows only
		}
	}
	for i, a := range p.aggs {
		if a.fn == plan.UDAFFunction {
			continue
		}
		for row, s := range slots {
			if s == nil {
				targets[row] = nil
			} else {
				targets[row] = &s.acc[i]
			}
		}
		accumulateColumn(a, b, targets, ts)
	}
	if p.udafs != nil {
		groups := make([]*udafRows, n)
		for row, s := range slots {
			if s != nil {
				groups[row] = &s.kept
			}
		}
		if err := p.udafs.keep(ctx, b, groups); err != nil {
			return err
		}
	}
	for _, m := range p.merges {
		m.to.kept.moveFrom(&m.from.kept)
		m.to.rows += m.from.rows
		for i := range m.to.acc {
			m.to.acc[i].merge(&m.from.acc[i])
		}
	}
	clear(slots)
	clear(targets)
	for _, r := range p.refire {
		p.fireWindow(r.k, r.w)
	}
	for _, k := range p.idle {
		p.forgetIfEmpty(k)
	}
	clear(p.idle)
	p.idle = p.idle[:0]
	if err := p.emitLate(ctx, b); err != nil {
		return err
	}
	return p.emitRows(ctx, emit)
}

// emitLate sends the batch's rows too late for every window to the
// late-rows output, unchanged, or drops and counts them
// (numLateRecordsDropped), as Flink's WindowOperator: a row sent to the
// side output is not counted as dropped.
func (p *windowProc) emitLate(ctx context.Context, b arrow.RecordBatch) error {
	if len(p.lateIdx) == 0 {
		return nil
	}
	if p.lateRows == nil {
		p.dropped.Add(int64(len(p.lateIdx)))
		return nil
	}
	late := b
	if len(p.lateIdx) < int(b.NumRows()) {
		var err error
		if late, err = takeRows(compute.WithAllocator(ctx, p.mem), b, p.lateIdx); err != nil {
			return fmt.Errorf("window: late rows: %w", err)
		}
	} else {
		b.Retain()
	}
	return p.lateRows(ctx, late)
}

// keyOf returns the windows of row's key: prev when the row has prev's key
// (runs of one key are common), else from memory, the backend, or new.
func (p *windowProc) keyOf(b arrow.RecordBatch, keyCols []arrow.Array, row int, prev *winKey) (*winKey, error) {
	p.keyBuf = p.keyBuf[:0]
	for _, col := range keyCols {
		p.keyBuf = appendKey(p.keyBuf, col, row)
	}
	if prev != nil && string(prev.stateKey.Bytes) == string(p.keyBuf) {
		return prev, nil
	}
	if k, ok := p.index[string(p.keyBuf)]; ok {
		return k, nil
	}
	kg := 0
	if len(p.keys) > 0 {
		if p.kgs == nil {
			kgs, err := partition.KeyGroups(b, p.keys, p.maxP)
			if err != nil {
				return nil, err
			}
			p.kgs = kgs
		}
		kg = int(p.kgs[row])
	}
	sk := state.Key{Group: kg, Bytes: []byte(string(p.keyBuf))}
	k, err := p.loadKey(sk)
	if err != nil || k != nil {
		return k, err
	}
	k = &winKey{stateKey: sk}
	for _, col := range keyCols {
		k.null = append(k.null, col.IsNull(row))
		if col.IsNull(row) {
			k.key = append(k.key, "")
		} else {
			k.key = append(k.key, col.ValueStr(row))
		}
	}
	if p.sessions {
		k.sessions, _ = window.NewMergingSet(nil)
	}
	p.index[string(sk.Bytes)] = k
	delete(p.deleted, string(sk.Bytes))
	return k, nil
}

// A key's slots are sorted by end (slices never overlap, nor do the state
// windows of sessions in flight): lookups are binary searches, a window's
// slices a run, expired slices a prefix.

func (p *windowProc) newSlot(k *winKey, w window.Window) *winSlot {
	s := &winSlot{w: w, acc: make([]accumulator, len(p.aggs))}
	i := len(k.slots)
	for i > 0 && k.slots[i-1].w.End > w.End { // mostly the newest: appended
		i--
	}
	k.slots = slices.Insert(k.slots, i, s)
	return s
}

// firstEndingAfter is the index of the first slot ending after t.
func (k *winKey) firstEndingAfter(t int64) int {
	return sort.Search(len(k.slots), func(i int) bool { return k.slots[i].w.End > t })
}

func (k *winKey) slot(w window.Window) *winSlot {
	if n := len(k.slots); n > 0 && k.slots[n-1].w == w { // rows mostly go to the newest
		return k.slots[n-1]
	}
	if i := k.firstEndingAfter(w.End - 1); i < len(k.slots) && k.slots[i].w == w {
		return k.slots[i]
	}
	return nil
}

func (k *winKey) removeSlot(s *winSlot) {
	if i := k.firstEndingAfter(s.w.End - 1); i < len(k.slots) && k.slots[i] == s {
		k.slots = slices.Delete(k.slots, i, i+1)
	}
}

// assignSlice returns the slice that takes a row at ts, or nil when the
// row is too late for every window it belongs to (it is counted).
func (p *windowProc) assignSlice(k *winKey, ts int64) (*winSlot, error) {
	end := p.slicer.SliceEnd(ts)
	w := window.Window{Start: end - p.slicer.SliceSize(), End: end}
	last := p.slicer.LastWindowEnd(end)
	if !window.Fired(end, p.wm) {
		s := k.slot(w)
		if s != nil {
			return s, nil
		}
		if err := p.register(k, nsFire, window.Window{End: end}, end-1); err != nil {
			return nil, err
		}
		return p.newSlice(k, w, last)
	}
	if window.WindowLate(last, p.lateness, p.wm) {
		p.late = window.RowLate(ts, p.lateness, p.wm)
		return nil, nil
	}
	// Late, but some window of the slice is not cleaned up: the row
	// updates them; those that fired fire again after the batch.
	s := k.slot(w)
	if s == nil {
		var err error
		if s, err = p.newSlice(k, w, last); err != nil {
			return nil, err
		}
	}
	if next, ok := window.FirstUnfiredWindowEnd(p.slicer, end, p.wm); ok {
		if err := p.register(k, nsFire, window.Window{End: next}, next-1); err != nil {
			return nil, err
		}
	}
	for e := end; e <= last && window.Fired(e, p.wm); e += p.slicer.SliceSize() {
		if !window.WindowLate(e, p.lateness, p.wm) {
			p.markRefire(k, window.Window{Start: p.slicer.WindowStart(e), End: e})
		}
	}
	return s, nil
}

// newSlice adds a slice and, with allowed lateness, the timer that drops
// it after its last window's cleanup time (without lateness, that
// window's firing drops it).
func (p *windowProc) newSlice(k *winKey, w window.Window, last int64) (*winSlot, error) {
	if p.lateness > 0 {
		if err := p.register(k, nsCleanup, w, window.CleanupTime(last, p.lateness)); err != nil {
			return nil, err
		}
	}
	return p.newSlot(k, w), nil
}

func (p *windowProc) markRefire(k *winKey, w window.Window) {
	for _, r := range p.refire {
		if r.k == k && r.w == w {
			return
		}
	}
	p.refire = append(p.refire, refire{k: k, w: w})
}

// assignSession adds [ts, ts+gap) to the key's sessions (merging them as
// Flink's MergingWindowSet) and returns the slot that takes the row, or
// nil when the session is too late (the row is counted).
func (p *windowProc) assignSession(k *winKey, ts int64) (*winSlot, error) {
	w := p.session.AssignWindows(ts, nil)[0]
	result, merge, merged := k.sessions.Add(w)
	if window.WindowLate(result.End, p.lateness, p.wm) {
		// Nothing in flight can be late, so result is w alone.
		if err := k.sessions.Retire(result); err != nil {
			return nil, err
		}
		p.late = window.RowLate(ts, p.lateness, p.wm)
		return nil, nil
	}
	stateWindow, _ := k.sessions.StateWindow(result)
	target := k.slot(stateWindow)
	if target == nil {
		target = p.newSlot(k, stateWindow)
	}
	if merged {
		for _, mw := range merge.Merged {
			if err := p.unregister(k, mw); err != nil {
				return nil, err
			}
		}
		for _, sw := range merge.MergedStateWindows {
			if from := k.slot(sw); from != nil {
				k.removeSlot(from)
				p.merges = append(p.merges, slotMerge{from: from, to: target})
			}
		}
	}
	if merged || result == w {
		if window.Fired(result.End, p.wm) {
			p.markRefire(k, result)
		} else if err := p.register(k, nsFire, result, result.End-1); err != nil {
			return nil, err
		}
		if p.lateness > 0 {
			if err := p.register(k, nsCleanup, result, window.CleanupTime(result.End, p.lateness)); err != nil {
				return nil, err
			}
		}
	} else if window.Fired(result.End, p.wm) {
		p.markRefire(k, result)
	}
	return target, nil
}

// namespace encodes a timer's purpose and window: sliced windows by end,
// sessions by start and end.
func (p *windowProc) namespace(what byte, w window.Window) []byte {
	ns := make([]byte, 0, 17)
	ns = append(ns, what)
	if p.sessions {
		ns = binary.BigEndian.AppendUint64(ns, uint64(w.Start))
	}
	return binary.BigEndian.AppendUint64(ns, uint64(w.End))
}

func (p *windowProc) register(k *winKey, what byte, w window.Window, at int64) error {
	return p.timers.RegisterEventTimeTimer(k.stateKey, p.namespace(what, w), at)
}

// unregister deletes a merged session's timers.
func (p *windowProc) unregister(k *winKey, w window.Window) error {
	if err := p.timers.DeleteEventTimeTimer(k.stateKey, p.namespace(nsFire, w), w.End-1); err != nil {
		return err
	}
	if p.lateness > 0 {
		return p.timers.DeleteEventTimeTimer(k.stateKey, p.namespace(nsCleanup, w), window.CleanupTime(w.End, p.lateness))
	}
	return nil
}

// OnWatermark fires the windows whose end - 1 the watermark reached and
// drops those past their cleanup time, then forwards the watermark.
func (p *windowProc) OnWatermark(ctx context.Context, wm operator.Watermark, emit operator.Emit) (operator.Watermark, error) {
	p.wm = int64(wm)
	if err := p.timers.AdvanceWatermark(int64(wm), p.onTimer); err != nil {
		return wm, err
	}
	return wm, p.emitRows(ctx, emit)
}

func (p *windowProc) onTimer(t state.Timer) error {
	k, err := p.timerKey(t.Key)
	if err != nil || k == nil {
		return err // nil: the key's windows are gone
	}
	if len(t.Namespace) < 9 {
		return fmt.Errorf("window: a timer has a namespace of %d bytes; the state was not written by this window aggregation", len(t.Namespace))
	}
	var w window.Window
	if p.sessions && len(t.Namespace) == 17 {
		w.Start = int64(binary.BigEndian.Uint64(t.Namespace[1:9]))
		w.End = int64(binary.BigEndian.Uint64(t.Namespace[9:]))
	} else {
		w.End = int64(binary.BigEndian.Uint64(t.Namespace[1:9]))
	}
	switch {
	case p.sessions && t.Namespace[0] == nsFire:
		p.fireWindow(k, w)
		if p.lateness == 0 {
			p.retireSession(k, w)
		}
	case p.sessions:
		p.retireSession(k, w)
	case t.Namespace[0] == nsFire:
		w.Start = p.slicer.WindowStart(w.End)
		if p.fireWindow(k, w) {
			if next, ok := p.slicer.NextWindowEnd(w.End, false); ok {
				if err := p.register(k, nsFire, window.Window{End: next}, next-1); err != nil {
					return err
				}
			}
		}
		if p.lateness == 0 {
			// The slices whose last window this was: a prefix, as the
			// last window end grows with the slice's.
			n := 0
			for n < len(k.slots) && p.slicer.LastWindowEnd(k.slots[n].w.End) <= w.End {
				releaseSlot(k.slots[n])
				n++
			}
			k.slots = slices.Delete(k.slots, 0, n)
			k.dirty = true
		}
	default:
		if s := k.slot(window.Window{Start: w.End - p.slicer.SliceSize(), End: w.End}); s != nil {
			k.removeSlot(s)
			releaseSlot(s)
			k.dirty = true
		}
	}
	p.forgetIfEmpty(k)
	return nil
}

// fireWindow adds window w of key k to the rows to emit, unless it holds
// no row; it says whether it did.
func (p *windowProc) fireWindow(k *winKey, w window.Window) bool {
	if p.sessions {
		sw, ok := k.sessions.StateWindow(w)
		if !ok {
			return false
		}
		s := k.slot(sw)
		if s == nil || s.rows == 0 {
			return false
		}
		r := winRow{k: k, start: w.Start, end: w.End, acc: cloneAccs(s.acc)}
		r.kept.addRetained(&s.kept)
		p.out = append(p.out, r)
		return true
	}
	var acc []accumulator
	var kept udafRows
	for _, s := range k.slots[k.firstEndingAfter(w.Start):] {
		if s.w.End > w.End {
			break
		}
		if s.rows > 0 {
			if acc == nil {
				acc = make([]accumulator, len(p.aggs))
			}
			for i := range acc {
				acc[i].merge(&s.acc[i])
			}
			kept.addRetained(&s.kept)
		}
	}
	if acc == nil {
		return false
	}
	p.out = append(p.out, winRow{k: k, start: w.Start, end: w.End, acc: acc, kept: kept})
	return true
}

func cloneAccs(accs []accumulator) []accumulator {
	out := make([]accumulator, len(accs))
	for i := range out {
		out[i].merge(&accs[i])
	}
	return out
}

func (p *windowProc) retireSession(k *winKey, w window.Window) {
	sw, ok := k.sessions.StateWindow(w)
	if !ok {
		return
	}
	_ = k.sessions.Retire(w)
	if s := k.slot(sw); s != nil {
		k.removeSlot(s)
		releaseSlot(s)
	}
	k.dirty = true
}

// forgetIfEmpty removes a key with no window left from memory; the
// backend's copy goes at the next checkpoint.
func (p *windowProc) forgetIfEmpty(k *winKey) {
	if len(k.slots) > 0 || (k.sessions != nil && k.sessions.Len() > 0) {
		return
	}
	delete(p.index, string(k.stateKey.Bytes))
	p.deleted[string(k.stateKey.Bytes)] = k.stateKey
}

// emitRows emits the window rows gathered, as batches of at most
// maxWindowRows rows.
func (p *windowProc) emitRows(ctx context.Context, emit operator.Emit) error {
	for len(p.out) > 0 {
		n := min(len(p.out), maxWindowRows)
		rows := p.out[:n]
		var udafs []arrow.Array
		if p.udafs != nil {
			var err error
			groups := make([]*udafRows, len(rows))
			for i := range rows {
				groups[i] = &rows[i].kept
			}
			if udafs, err = p.udafs.evaluate(ctx, groups); err != nil {
				return err
			}
		}
		b, err := p.buildRows(rows, udafs)
		releaseAll(udafs)
		if err != nil {
			return err
		}
		releaseRows(rows)
		clear(rows)
		p.out = p.out[n:]
		if err := emit(ctx, b); err != nil {
			return err
		}
	}
	p.out = p.out[:0]
	return nil
}

const maxWindowRows = 64 << 10

// releaseRows frees the kept rows of window rows emitted or dropped.
func releaseRows(rows []winRow) {
	for i := range rows {
		rows[i].kept.release()
	}
}

// buildRows makes the output batch of rows; udafs are the pandas UDAFs'
// results, one column per UDAF aggregate aligned with rows.
func (p *windowProc) buildRows(rows []winRow, udafs []arrow.Array) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, 0, p.schema.NumFields())
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	for i := range p.keys {
		c, err := buildKeyColumn(p.mem, p.schema.Field(i).Type, len(rows), func(j int) (string, bool) {
			return rows[j].k.key[i], rows[j].k.null[i]
		})
		if err != nil {
			return nil, fmt.Errorf("window key %s: %w", p.schema.Field(i).Name, err)
		}
		cols = append(cols, c)
	}
	for _, end := range []bool{false, true} {
		f := p.schema.Field(len(cols))
		b := array.NewTimestampBuilder(p.mem, f.Type.(*arrow.TimestampType))
		b.Reserve(len(rows))
		for _, r := range rows {
			if end {
				b.UnsafeAppend(arrow.Timestamp(r.end))
			} else {
				b.UnsafeAppend(arrow.Timestamp(r.start))
			}
		}
		cols = append(cols, b.NewArray())
		b.Release()
	}
	nextUDAF := 0
	for i, a := range p.aggs {
		f := p.schema.Field(len(p.keys) + 2 + i)
		if a.fn == plan.UDAFFunction {
			col := udafs[nextUDAF]
			nextUDAF++
			col.Retain()
			cols = append(cols, col)
			continue
		}
		b := array.NewBuilder(p.mem, f.Type)
		for _, r := range rows {
			if err := appendAggregate(b, a, r.acc[i]); err != nil {
				b.Release()
				return nil, fmt.Errorf("window aggregate %s: %w", f.Name, err)
			}
		}
		cols = append(cols, b.NewArray())
		b.Release()
	}
	out := array.NewRecordBatch(p.schema, cols, int64(len(rows)))
	return out, nil
}

// Open starts the pandas UDAFs' workers.
func (p *windowProc) Open(ctx context.Context) error {
	if p.udafs == nil {
		return nil
	}
	return p.udafs.open(ctx)
}

// Finish closes the pandas UDAFs' workers in order; the maximum watermark
// of the end of input fired every window before.
func (p *windowProc) Finish(context.Context, operator.Emit) error {
	if p.udafs == nil {
		return nil
	}
	return p.udafs.close()
}

// Cancel stops the pandas UDAFs' workers without waiting on them.
func (p *windowProc) Cancel(error) {
	if p.udafs != nil {
		p.udafs.cancel()
	}
}

// releaseKeys frees the kept rows of every key in memory.
func (p *windowProc) releaseKeys() {
	for _, k := range p.index {
		for _, s := range k.slots {
			releaseSlot(s)
		}
	}
}

func releaseAll[T interface{ Release() }](xs []T) {
	for _, x := range xs {
		if any(x) != nil {
			x.Release()
		}
	}
}

// splitAssigner is a as the session assigner or the slicer the operator
// runs, and an error for any other: a checked assertion, so that an
// assigner added to runtime/window without its case here fails the job's
// start with a message rather than panicking.
func splitAssigner(a window.Assigner) (window.Session, window.Slicer, error) {
	switch a := a.(type) {
	case window.Session:
		return a, nil, nil
	case window.Slicer:
		return window.Session{}, a, nil
	}
	return window.Session{}, nil, fmt.Errorf("window assigner %T is neither a session nor sliced into panes: the window operator cannot run it", a)
}
