package operators

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/runtime/operator"
	"github.com/flinkgo/flinkgo/runtime/partition"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/runtime/rowkind"
	"github.com/flinkgo/flinkgo/state"
)

// keyedAggregateKind groups rows by key over keyed state; the planner
// resolved its emit mode (plan.Operator.EmitUpdates).
func keyedAggregateKind(opts Options) operator.Kind {
	return operator.Kind{
		Kind: plan.KindKeyedAggregate,
		Schema: func(op *plan.Operator, _ []*arrow.Schema) (*arrow.Schema, error) {
			s, err := decodeSchema(op.OutputSchema)
			if err != nil || !op.Changelog.IsChangelog() {
				return s, err
			}
			return rowkind.WithColumn(s), nil
		},
		State: operator.StateDescriptor{Keyed: true, What: "one accumulator row per key; the distinct values of count_distinct per key; over a changelog, the values of min and max per key"},
		New: func(c *operator.Context) (operator.Operator, error) {
			p, err := newAggProc(c.Op.Node, c.Input(), c.Out, c.Allocator, c.MaxParallelism, c.Op.EmitUpdates, opts.UpdateInterval)
			if err != nil {
				return nil, err
			}
			p.name, p.mode = c.Op.Name, c.Op.Changelog
			p.ttl = aggStateTTL(c.Op.Node.KeyedAggregate, opts, p.updates)
			if p.ttl > 0 && p.hasCountDistinct() {
				// A value set whose entries expire apart from their group
				// would count a value twice or not at all.
				return nil, fmt.Errorf("%s: count_distinct cannot be combined with a state TTL (%s, from agg(state_ttl=) or table.exec.state.ttl) yet: the key's value set and its count would expire apart; drop the TTL or aggregate per window", c.Op.Name, p.ttl)
			}
			if err := p.setupState(context.Background(), c, opts.KeyedCacheGroups); err != nil {
				p.Release()
				return nil, err
			}
			if rowkind.Has(c.Input()) || p.hasCountDistinct() {
				if err := p.openMultisets(); err != nil {
					p.Release()
					return nil, err
				}
			}
			if p.udafs, err = newPandasUDAFs(c, opts, c.Op.Node.KeyedAggregate.Aggregates, len(p.keys)); err != nil {
				p.Release()
				return nil, err
			}
			return p, nil
		},
	}
}

// aggProc groups rows by key and emits one row per group when its input
// ends: keys first, then the aggregates, as the node's schema declares.
//
// Groups live in memory (index, list) as a cache of the keyed state
// (aggstate.go): a checkpoint writes the groups changed since the last one
// into the subtask's Pebble backend and snapshots it, so the aggregation
// survives failover and rescales by key group.
type aggProc struct {
	operator.Base
	keys   []int
	aggs   []aggSpec
	schema *arrow.Schema
	mem    memory.Allocator
	// index maps an encoded key to its group in list (order of first
	// appearance).
	index  map[string]int
	list   []*group
	keyBuf []byte
	gids   []int // per batch: each row's group, reused
	// targets: per batch and aggregate, each row's accumulator, reused.
	targets []*accumulator
	kgs     []int32
	maxP    int
	// stateful: the keyed state backend and what it holds (aggstate.go).
	keyed keyedState
	// updates mode (else final): emit changed groups every updateInterval.
	updates        bool
	updateInterval time.Duration
	nextUpdate     time.Time
	// intKey: a single int64 key, looked up without encoding; nullGroup is
	// the group of its null key, -1 until one comes.
	intKey    bool
	intIndex  map[int64]int
	nullGroup int
	// smallIndex[k] is 1 + the group of the int64 key k in [0, smallKeys),
	// 0 for none: small keys, the common case, without a map lookup.
	smallIndex []int32
	// mode is the output's changelog mode: retract or upsert in updates
	// mode, append-only in final mode (aggretract.go).
	mode rowkind.Mode
	name string
	// sets: the min/max value multisets when the input is a changelog.
	sets     multisets
	valueBuf []byte
	// extremeBuf holds a group's current min/max encoded as the multiset
	// orders values (aggretract.go: mayBeExtreme).
	extremeBuf []byte
	// udafs runs the pandas UDAFs (bounded input, final mode: aggudaf.go),
	// nil when there are none.
	udafs *pandasUDAFs
	// ttl is the state TTL (aggttl.go), 0 for none.
	ttl time.Duration
}

// smallKeys bounds the int64 keys looked up in a slice (256 KiB at most).
const smallKeys = 1 << 16

type group struct {
	key  []string // ValueStr of each key, "" when null
	null []bool
	acc  []accumulator
	// stateKey is the group's key in the state backend (the encoded key
	// and its key group); dirty: changed since the backend last saw it.
	stateKey state.Key
	dirty    bool
	// changed: since the last emission (updates mode).
	changed bool
	// rows is the number of rows the group holds: accumulated minus
	// retracted; zero deletes it.
	rows int64
	// emitted: the group's row prev went out last (updates mode), to be
	// retracted (-U, -D) when the group changes.
	emitted bool
	prev    []accumulator
	// kept are the group's rows for the pandas UDAFs (none without).
	kept udafRows
	// touched is when a row last came (Unix ms; state TTL only, aggttl.go).
	touched int64
}

func newAggProc(node *plan.Node, in, out *arrow.Schema, mem memory.Allocator, maxP int, updates bool, interval time.Duration) (*aggProc, error) {
	spec := node.KeyedAggregate
	p := &aggProc{schema: out, mem: mem, index: map[string]int{}, maxP: maxP,
		updates: updates, updateInterval: interval, nextUpdate: time.Now().Add(interval)}
	for _, k := range spec.Keys {
		idx := in.FieldIndices(k)
		if len(idx) == 0 {
			return nil, fmt.Errorf("key %q is not a column of %s", k, in)
		}
		p.keys = append(p.keys, idx[0])
	}
	for _, a := range spec.Aggregates {
		if a.Function == plan.UDAFFunction {
			p.aggs = append(p.aggs, aggSpec{fn: plan.UDAFFunction, column: -1})
			continue
		}
		s, err := parseAggSpec(a, in, keyedAggregateFunctions)
		if err != nil {
			return nil, err
		}
		p.aggs = append(p.aggs, s)
	}
	p.intKey = len(p.keys) == 1 && in.Field(p.keys[0]).Type.ID() == arrow.INT64
	p.intIndex, p.nullGroup = map[int64]int{}, -1
	if rowkind.WithoutColumn(out).NumFields() != len(p.keys)+len(p.aggs) {
		return nil, fmt.Errorf("declared schema %s does not have %d keys and %d aggregates", out, len(p.keys), len(p.aggs))
	}
	return p, nil
}

func (p *aggProc) Process(ctx context.Context, _ int, b arrow.RecordBatch, _ operator.Emit) error {
	n := int(b.NumRows())
	if cap(p.gids) < n {
		p.gids = make([]int, n)
	}
	gids := p.gids[:n]
	keyCols := make([]arrow.Array, len(p.keys))
	for i, k := range p.keys {
		keyCols[i] = b.Column(k)
	}
	p.kgs = nil // key groups of b's rows, computed when a new key needs them
	var err error
	if p.intKey {
		err = p.intGroups(b, keyCols[0].(*array.Int64), gids)
	} else {
		err = p.rowGroups(b, keyCols, gids)
	}
	if err != nil {
		return err
	}
	if p.ttl > 0 {
		p.expireTouched(gids)
	}
	if cap(p.targets) < n {
		p.targets = make([]*accumulator, n)
	}
	if kinds := rowkind.KindsOf(b); kinds != nil {
		return p.processChangelog(b, kinds, gids)
	}
	for _, g := range gids {
		p.list[g].rows++
	}
	targets := p.targets[:n]
	for i, a := range p.aggs {
		if a.fn == plan.UDAFFunction {
			continue
		}
		for row, g := range gids {
			targets[row] = &p.list[g].acc[i]
		}
		if a.fn == "count_distinct" {
			if err := p.updateDistinct(i, a, b, gids, targets); err != nil {
				return fmt.Errorf("aggregate %s: %w", p.schema.Field(len(p.keys)+i).Name, err)
			}
			continue
		}
		accumulateColumn(a, b, targets, nil)
	}
	if p.udafs != nil {
		return p.keepUDAFRows(ctx, b, gids)
	}
	return nil
}

// rowGroups assigns the group of each row of b.
func (p *aggProc) rowGroups(b arrow.RecordBatch, keyCols []arrow.Array, gids []int) error {
	for row := range gids {
		p.keyBuf = p.keyBuf[:0]
		for _, col := range keyCols {
			p.keyBuf = appendKey(p.keyBuf, col, row)
		}
		gid, ok := p.index[string(p.keyBuf)]
		if !ok {
			var key []string
			var null []bool
			for _, col := range keyCols {
				null = append(null, col.IsNull(row))
				if col.IsNull(row) {
					key = append(key, "")
				} else {
					key = append(key, col.ValueStr(row))
				}
			}
			var err error
			if gid, err = p.group(b, row, string(p.keyBuf), key, null); err != nil {
				return err
			}
			p.index[string(p.keyBuf)] = gid
		}
		gids[row] = gid
		p.list[gid].dirty, p.list[gid].changed = true, true
	}
	return nil
}

// intGroups assigns the group of each row of a single int64 key.
func (p *aggProc) intGroups(b arrow.RecordBatch, keys *array.Int64, gids []int) error {
	for row := range gids {
		if keys.IsNull(row) {
			if p.nullGroup < 0 {
				gid, err := p.group(b, row, string(appendKey(nil, keys, row)), []string{""}, []bool{true})
				if err != nil {
					return err
				}
				p.nullGroup = gid
			}
			gids[row] = p.nullGroup
			p.list[p.nullGroup].dirty, p.list[p.nullGroup].changed = true, true
			continue
		}
		k := keys.Value(row)
		var gid int
		ok := false
		if uint64(k) < uint64(len(p.smallIndex)) {
			gid = int(p.smallIndex[k]) - 1
			ok = gid >= 0
		} else if uint64(k) >= smallKeys {
			gid, ok = p.intIndex[k]
		}
		if !ok {
			var err error
			gid, err = p.group(b, row, string(appendKey(nil, keys, row)), []string{strconv.FormatInt(k, 10)}, []bool{false})
			if err != nil {
				return err
			}
			if uint64(k) < smallKeys {
				if need := int(k) + 1; need > len(p.smallIndex) {
					p.smallIndex = append(p.smallIndex, make([]int32, need-len(p.smallIndex))...)
				}
				p.smallIndex[k] = int32(gid) + 1
			} else {
				p.intIndex[k] = gid
			}
		}
		gids[row] = gid
		p.list[gid].dirty, p.list[gid].changed = true, true
	}
	return nil
}

// group returns the index in list of the group of row `row` of b, whose
// encoded key is encoded: loaded from the state backend when a checkpoint
// or restore put it there, else new.
func (p *aggProc) group(b arrow.RecordBatch, row int, encoded string, key []string, null []bool) (int, error) {
	kg, err := p.keyGroup(b, row)
	if err != nil {
		return 0, err
	}
	g := &group{key: key, null: null, stateKey: state.Key{Group: kg, Bytes: []byte(encoded)}, dirty: true}
	if loaded, ok, err := p.load(g.stateKey); err != nil {
		return 0, err
	} else if ok {
		g = loaded
	} else {
		g.acc = make([]accumulator, len(p.aggs))
	}
	p.list = append(p.list, g)
	return len(p.list) - 1, nil
}

// keyGroup returns the key group of row `row` of b, hashing the batch's
// keys once, on its first new key.
func (p *aggProc) keyGroup(b arrow.RecordBatch, row int) (int, error) {
	if p.kgs == nil {
		kgs, err := partition.KeyGroups(b, p.keys, p.maxP)
		if err != nil {
			return 0, err
		}
		p.kgs = kgs
	}
	return int(p.kgs[row]), nil
}

// appendKey encodes one key value so that equal values, and only they,
// encode equally: a type tag, then the value's bytes.
func appendKey(buf []byte, col arrow.Array, row int) []byte {
	if col.IsNull(row) {
		return append(buf, 'N')
	}
	switch c := col.(type) {
	case *array.Int64:
		return binary.LittleEndian.AppendUint64(append(buf, 'i'), uint64(c.Value(row)))
	case *array.Int32:
		return binary.LittleEndian.AppendUint32(append(buf, 'i'), uint32(c.Value(row)))
	case *array.Float64:
		return binary.LittleEndian.AppendUint64(append(buf, 'f'), math.Float64bits(c.Value(row)))
	case *array.String:
		v := c.Value(row)
		buf = binary.LittleEndian.AppendUint32(append(buf, 's'), uint32(len(v)))
		return append(buf, v...)
	case *array.Boolean:
		if c.Value(row) {
			return append(buf, 't')
		}
		return append(buf, 'F')
	}
	v := col.ValueStr(row)
	buf = binary.LittleEndian.AppendUint32(append(buf, 'v'), uint32(len(v)))
	return append(buf, v...)
}

// Finish emits the results. Final mode: every group that holds rows, in
// order of first appearance when every group is in memory, else in
// key-group order from the state backend. Updates mode: the changes since
// the last emission.
func (p *aggProc) Finish(ctx context.Context, emit operator.Emit) error {
	if p.updates {
		return p.emitChanged(ctx, emit)
	}
	if err := p.loadAll(); err != nil {
		return err
	}
	if p.udafs != nil {
		return p.finishUDAFs(ctx, emit)
	}
	rows, err := p.finalRows()
	if err != nil {
		return err
	}
	return p.emitRows(ctx, emit, rows, nil)
}

// finalRows are the +I rows of final mode: every group that holds rows.
func (p *aggProc) finalRows() ([]outRow, error) {
	rows := make([]outRow, 0, len(p.list))
	for _, g := range p.list {
		if g.rows < 0 {
			return nil, p.overRetracted(g)
		}
		if g.rows > 0 {
			rows = append(rows, outRow{g: g, acc: g.acc, kind: rowkind.Insert})
		}
	}
	return rows, nil
}

// outRow is one output row: a group's key, the aggregates of acc, a kind.
type outRow struct {
	g    *group
	acc  []accumulator
	kind rowkind.Kind
}

// emitChanged emits the changes of every group changed since the last
// emission (updates mode), as Flink's GroupAggFunction: +I for a new key;
// -U of the row emitted last and +U of the new one (retract), or +U alone
// (upsert), for a key whose results changed; -D of the row emitted last for
// a key that holds no rows any more.
func (p *aggProc) emitChanged(ctx context.Context, emit operator.Emit) error {
	p.nextUpdate = time.Now().Add(p.updateInterval)
	var rows []outRow
	for _, g := range p.list {
		if !g.changed {
			continue
		}
		g.changed = false
		switch {
		case g.rows < 0:
			return p.overRetracted(g)
		case g.rows == 0:
			if g.emitted {
				rows = append(rows, outRow{g: g, acc: g.prev, kind: rowkind.Delete})
			}
			g.emitted, g.prev, g.dirty = false, nil, true
			g.acc = make([]accumulator, len(p.aggs)) // no float residue
		case !g.emitted:
			g.emitted, g.prev = true, slices.Clone(g.acc)
			rows = append(rows, outRow{g: g, acc: g.prev, kind: rowkind.Insert})
		case !p.sameOutput(g.prev, g.acc):
			if p.mode == rowkind.Retract {
				rows = append(rows, outRow{g: g, acc: g.prev, kind: rowkind.UpdateBefore})
			}
			g.prev = slices.Clone(g.acc)
			rows = append(rows, outRow{g: g, acc: g.prev, kind: rowkind.UpdateAfter})
		}
	}
	return p.emitRows(ctx, emit, rows, nil)
}

// overRetracted is the error of a group retracted more often than it got
// rows: its input is not a valid changelog.
func (p *aggProc) overRetracted(g *group) error {
	return fmt.Errorf("keyed aggregation %q: key %v received %d retractions more than rows: its input retracts rows it never sent", p.name, g.key, -g.rows)
}

// sameOutput reports whether two accumulator rows give the same results.
func (p *aggProc) sameOutput(a, b []accumulator) bool {
	for i, s := range p.aggs {
		if outputValue(s, &a[i]) != outputValue(s, &b[i]) {
			return false
		}
	}
	return true
}

func (p *aggProc) Deadline() (time.Time, bool) { return p.nextUpdate, p.updates }

func (p *aggProc) OnTimer(ctx context.Context, emit operator.Emit) error {
	return p.emitChanged(ctx, emit)
}

// emitRows emits one batch of rows, with their kinds when the output is a
// changelog; udafs are the pandas UDAFs' results, one column per UDAF
// aggregate aligned with rows.
func (p *aggProc) emitRows(ctx context.Context, emit operator.Emit, rows []outRow, udafs []arrow.Array) error {
	if len(rows) == 0 {
		return nil
	}
	cols := make([]arrow.Array, 0, p.schema.NumFields())
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	for i := range p.keys {
		c, err := buildKeyColumn(p.mem, p.schema.Field(i).Type, len(rows), func(j int) (string, bool) {
			return rows[j].g.key[i], rows[j].g.null[i]
		})
		if err != nil {
			return fmt.Errorf("key %s: %w", p.schema.Field(i).Name, err)
		}
		cols = append(cols, c)
	}
	nextUDAF := 0
	for i, a := range p.aggs {
		f := p.schema.Field(len(p.keys) + i)
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
				return fmt.Errorf("aggregate %s: %w", f.Name, err)
			}
		}
		cols = append(cols, b.NewArray())
		b.Release()
	}
	if rowkind.Has(p.schema) {
		cols = append(cols, rowkind.NewArray(p.mem, func(yield func(rowkind.Kind) bool) {
			for _, r := range rows {
				if !yield(r.kind) {
					return
				}
			}
		}))
	}
	return emit(ctx, array.NewRecordBatch(p.schema, cols, int64(len(rows))))
}

// buildKeyColumn builds a key column of type typ from n values given as
// ValueStr strings (null true for a null).
func buildKeyColumn(mem memory.Allocator, typ arrow.DataType, n int, value func(j int) (v string, null bool)) (arrow.Array, error) {
	dict, isDict := typ.(*arrow.DictionaryType)
	if isDict {
		typ = dict.ValueType
	}
	b := array.NewBuilder(mem, typ)
	defer b.Release()
	for j := range n {
		v, null := value(j)
		if null {
			b.AppendNull()
		} else if err := b.AppendValueFromString(v); err != nil {
			return nil, err
		}
	}
	values := b.NewArray()
	if !isDict {
		return values, nil
	}
	defer values.Release()
	ib := array.NewBuilder(mem, dict.IndexType)
	defer ib.Release()
	for row := range values.Len() {
		if values.IsNull(row) {
			ib.AppendNull()
		} else if err := ib.AppendValueFromString(strconv.Itoa(row)); err != nil {
			return nil, fmt.Errorf("%d groups do not fit the dictionary's %s indices: %w", values.Len(), dict.IndexType, err)
		}
	}
	indices := ib.NewArray()
	defer indices.Release()
	return array.NewDictionaryArray(dict, indices, values), nil
}
