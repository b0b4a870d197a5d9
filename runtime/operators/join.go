package operators

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/runtime/checkpoint"
	"github.com/flinkgo/flinkgo/runtime/operator"
	"github.com/flinkgo/flinkgo/runtime/partition"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/runtime/rowkind"
	"github.com/flinkgo/flinkgo/state"
)

// joinKind is the regular equi-join, as Flink's StreamingJoinOperator:
// both inputs are kept in keyed state on Pebble (joinView: one map per
// side, keyed by the join key, so a key's rows are one range scan), and
// each row, inserted or retracted, joins the stored rows of the other
// side. Inner joins of append-only inputs emit append-only output; an
// outer side emits its row padded with nulls while it has no match and
// retracts that (-D) when the first match arrives, and the reverse when
// the last match is retracted.
//
// A row with a NULL in a key column can never match under `=`: it is never
// stored. An inner side drops it; an outer side emits it padded at once
// (its retraction, the padded -D). With nulls_equal (IS NOT DISTINCT FROM)
// NULL is an ordinary key value.
func joinKind(opts Options) operator.Kind {
	return operator.Kind{
		Kind:   plan.KindJoin,
		Schema: joinSchemaOf,
		State:  operator.StateDescriptor{Keyed: true, What: "the rows of both sides, by join key"},
		New: func(c *operator.Context) (operator.Operator, error) {
			return newEquiJoin(c, opts)
		},
	}
}

// joinChangelog reports whether a join emits a changelog (with the
// row-kind column): an outer join, or an input that is one.
func joinChangelog(j *plan.Join, in []*arrow.Schema) bool {
	return j.How != plan.InnerJoin || rowkind.Has(in[0]) || rowkind.Has(in[1])
}

// joinSchemaOf is the left columns then the right ones (a right name that
// is also a left one gets the suffix), every column nullable, and the
// row-kind column when the join emits a changelog.
func joinSchemaOf(op *plan.Operator, in []*arrow.Schema) (*arrow.Schema, error) {
	if len(in) != 2 {
		return nil, fmt.Errorf("join has %d inputs, needs 2", len(in))
	}
	spec := op.Node.Join
	suffix := spec.Suffix
	if suffix == "" {
		suffix = "_right"
	}
	seen := map[string]bool{}
	var fields []arrow.Field
	for _, f := range rowkind.WithoutColumn(in[0]).Fields() {
		seen[f.Name] = true
		f.Nullable = true
		fields = append(fields, f)
	}
	for _, f := range rowkind.WithoutColumn(in[1]).Fields() {
		if seen[f.Name] {
			f.Name += suffix
			if seen[f.Name] {
				return nil, fmt.Errorf("join: the right column %q would be renamed %q, which is also a column; rename one first or pass another suffix", f.Name[:len(f.Name)-len(suffix)], f.Name)
			}
		}
		seen[f.Name] = true
		f.Nullable = true
		fields = append(fields, f)
	}
	out := arrow.NewSchema(fields, nil)
	if joinChangelog(spec, in) {
		out = rowkind.WithColumn(out)
	}
	return out, nil
}

// Pebble sizes of a join subtask's backend.
const (
	joinMemTable   = 32 << 20
	joinBlockCache = 16 << 20
)

// equiSide is how one input's rows are read and stored.
type equiSide struct {
	name   string // "left" or "right", for messages
	keys   []int
	outer  bool
	data   []int // the value columns (all but the row-kind column)
	rows   *rowCodec
	unique *rowCodec // the unique key's columns, nil when none is known
	view   *joinView
}

type equiJoin struct {
	operator.Base
	c          *operator.Context
	side       [2]equiSide
	nullsEqual bool
	changelog  bool // the output carries row kinds
	// storeUnmatchable turns the NULL-key rule off (rows with NULL keys
	// are stored, and still never match): for the test that measures
	// what the rule saves. Never set outside tests.
	storeUnmatchable bool
	ttl              time.Duration
	cacheKeys        int              // join keys kept in memory past a checkpoint (Options.KeyedCacheGroups)
	clock            func() time.Time // the state's TTL clock; nil: time.Now
	keyed            keyedState
	out              *joinOutput
	keyBuf, rowBuf   []byte
	ukBuf            []byte
	// counters for the log at the end
	droppedNull int64
}

func newEquiJoin(c *operator.Context, opts Options) (operator.Operator, error) {
	j, err := configureEquiJoin(c, opts)
	if err != nil {
		return nil, err
	}
	if err := j.openState(); err != nil {
		j.Release()
		return nil, err
	}
	return j, nil
}

func configureEquiJoin(c *operator.Context, opts Options) (*equiJoin, error) {
	spec := c.Op.Node.Join
	if len(c.In) != 2 {
		return nil, fmt.Errorf("join has %d inputs, needs 2", len(c.In))
	}
	if c.Keyed == nil {
		return nil, errors.New("join: no keyed state context")
	}
	how := spec.How
	j := &equiJoin{c: c, nullsEqual: spec.NullsEqual, changelog: joinChangelog(spec, c.In), ttl: opts.StateTTL,
		cacheKeys: opts.KeyedCacheGroups}
	if spec.StateTTLMs > 0 {
		j.ttl = time.Duration(spec.StateTTLMs) * time.Millisecond
	}
	j.side[0] = equiSide{name: "left", outer: how.OuterLeft()}
	j.side[1] = equiSide{name: "right", outer: how.OuterRight()}
	keyNames := [2][]string{spec.LeftKeys, spec.RightKeys}
	uniqueNames := [2][]string{spec.LeftUniqueKey, spec.RightUniqueKey}
	if len(keyNames[0]) == 0 || len(keyNames[0]) != len(keyNames[1]) {
		return nil, fmt.Errorf("join needs as many left keys as right keys, at least one; it has %v and %v", keyNames[0], keyNames[1])
	}
	for s := range 2 {
		in := c.In[s]
		side := &j.side[s]
		what := "the " + side.name + " input"
		index := func(name, role string) (int, error) {
			idx := in.FieldIndices(name)
			if len(idx) == 0 || name == rowkind.Column {
				return 0, fmt.Errorf("join: %s %q is not a column of %s", role, name, rowkind.WithoutColumn(in))
			}
			return idx[0], nil
		}
		for _, name := range keyNames[s] {
			i, err := index(name, side.name+" key")
			if err != nil {
				return nil, err
			}
			side.keys = append(side.keys, i)
		}
		for i := range rowkind.WithoutColumn(in).NumFields() {
			side.data = append(side.data, i)
		}
		var err error
		if side.rows, err = newRowCodec(in, side.data, what); err != nil {
			return nil, fmt.Errorf("join: %w", err)
		}
		if len(uniqueNames[s]) > 0 {
			var cols []int
			for _, name := range uniqueNames[s] {
				i, err := index(name, side.name+" unique key column")
				if err != nil {
					return nil, err
				}
				cols = append(cols, i)
			}
			if side.unique, err = newRowCodec(in, cols, what); err != nil {
				return nil, fmt.Errorf("join: %w", err)
			}
		}
	}
	for i := range j.side[0].keys {
		l, r := c.In[0].Field(j.side[0].keys[i]), c.In[1].Field(j.side[1].keys[i])
		if !arrow.TypeEqual(l.Type, r.Type) {
			return nil, fmt.Errorf("join: left key %q is %s but right key %q is %s; cast one so both have one type", l.Name, l.Type, r.Name, r.Type)
		}
	}
	return j, nil
}

// openState opens (or restores) the backend and registers both sides'
// maps, with the TTL when one is set. The join reads and writes Pebble for
// every row, so the backend is open from the start.
func (j *equiJoin) openState() error {
	// Every row is a range scan, a read and a write: a larger memtable
	// keeps recent rows out of L0 files (4 MB made lookups 1.5x slower).
	j.keyed.memTable, j.keyed.cache = joinMemTable, joinBlockCache
	if err := j.keyed.setup(context.Background(), j.c, "join-unused", 0); err != nil {
		return fmt.Errorf("join: %w", err)
	}
	j.keyed.clock = j.clock
	if err := j.keyed.open(); err != nil {
		return fmt.Errorf("join: %w", err)
	}
	var opts []state.StateOption
	if j.ttl > 0 {
		// As Flink's join state TTL: refreshed on write, never returned
		// once expired.
		opts = append(opts, state.WithTTL(state.TTL{Duration: j.ttl}))
	}
	for s := range 2 {
		v, err := newJoinView(j.keyed.backend, "join-"+j.side[s].name, j.side[s].unique != nil, j.side[s].outer, opts,
			j.ttl <= 0, j.keyed.complete, j.cacheKeys)
		if err != nil {
			return fmt.Errorf("join: %w", err)
		}
		j.side[s].view = v
	}
	return nil
}

func (j *equiJoin) Process(ctx context.Context, input int, b arrow.RecordBatch, emit operator.Emit) error {
	if input != 0 && input != 1 {
		return fmt.Errorf("join: input %d, only 0 (left) and 1 (right) exist", input)
	}
	side, other := &j.side[input], &j.side[1-input]
	n := int(b.NumRows())
	kinds := rowkind.KindsOf(b)
	if kinds != nil {
		if err := rowkind.Validate(b); err != nil {
			return fmt.Errorf("join: %s input: %w", side.name, err)
		}
	}
	if j.out == nil {
		j.out = newJoinOutput(j.c.Allocator, j.c.Out, j.side[0].rows, j.side[1].rows, j.changelog)
	}
	var groups []int32
	for row := range n {
		kind := rowkind.At(kinds, row)
		nullKey := !j.nullsEqual && anyNull(b, side.keys, row)
		j.rowBuf = side.rows.encode(j.rowBuf[:0], b, row)
		if nullKey && !j.storeUnmatchable {
			// Never matches, so never stored: an outer side's row is
			// final at once (and so is its retraction).
			if side.outer {
				if err := j.out.add(input, kind, j.rowBuf, nil); err != nil {
					return err
				}
			} else {
				j.droppedNull++
			}
			continue
		}
		if groups == nil {
			var err error
			if groups, err = partition.KeyGroups(b, side.keys, j.c.MaxParallelism); err != nil {
				return fmt.Errorf("join: %w", err)
			}
		}
		j.keyBuf = j.keyBuf[:0]
		for _, k := range side.keys {
			j.keyBuf = appendKey(j.keyBuf, b.Column(k), row)
		}
		key := state.Key{Group: int(groups[row]), Bytes: j.keyBuf}
		var uk []byte // the row's entry in its side's view
		if side.unique != nil {
			j.ukBuf = side.unique.encode(j.ukBuf[:0], b, row)
			uk = j.ukBuf
		} else {
			uk = j.rowBuf
		}
		var matches []joinRecord
		if !nullKey { // a stored NULL-key row (rule off) still never matches
			var err error
			if matches, err = other.view.records(key); err != nil {
				return err
			}
		}
		if err := j.apply(input, kind, key, uk, matches); err != nil {
			return err
		}
	}
	return j.out.flush(ctx, emit)
}

// apply is Flink's StreamingJoinOperator.processElement for one row (in
// j.rowBuf, stored under uk) of side input that matches `matches`.
func (j *equiJoin) apply(input int, kind rowkind.Kind, key state.Key, uk []byte, matches []joinRecord) error {
	side, other := &j.side[input], &j.side[1-input]
	total := 0
	for _, m := range matches {
		total += m.count
	}
	if kind.IsAccumulate() {
		if total == 0 {
			if side.outer {
				if err := j.out.add(input, kind, j.rowBuf, nil); err != nil {
					return err
				}
			}
		} else {
			for _, m := range matches {
				if other.outer {
					if m.assoc == 0 { // its padded row goes: it has a match now
						for range m.count {
							if err := j.out.add(1-input, rowkind.Delete, m.row, nil); err != nil {
								return err
							}
						}
					}
					if err := other.view.setAssoc(key, m, m.assoc+1); err != nil {
						return err
					}
				}
				for range m.count {
					if err := j.out.add(input, kind, j.rowBuf, m.row); err != nil {
						return err
					}
				}
			}
		}
		return side.view.add(key, uk, j.rowBuf, total)
	}
	if err := side.view.retract(key, uk); err != nil {
		return err
	}
	if total == 0 {
		if side.outer {
			return j.out.add(input, kind, j.rowBuf, nil)
		}
		return nil
	}
	for _, m := range matches {
		for range m.count {
			if err := j.out.add(input, kind, j.rowBuf, m.row); err != nil {
				return err
			}
		}
		if other.outer {
			if m.assoc == 1 { // its last match went: padded again
				for range m.count {
					if err := j.out.add(1-input, rowkind.Insert, m.row, nil); err != nil {
						return err
					}
				}
			}
			if err := other.view.setAssoc(key, m, max(m.assoc-1, 0)); err != nil {
				return err
			}
		}
	}
	return nil
}

func (j *equiJoin) Finish(context.Context, operator.Emit) error {
	if j.droppedNull > 0 {
		j.c.Logger.Debug("join dropped rows of an inner side whose key has a NULL (they never match)", "rows", j.droppedNull)
	}
	return nil
}

// SnapshotState writes the keys that changed since the last checkpoint
// into the backend (with a TTL every row is there already) and snapshots
// it.
func (j *equiJoin) SnapshotState(_ context.Context, target checkpoint.Target, _ operator.Emit, _ *checkpoint.SubtaskState) error {
	for s := range 2 {
		if err := j.side[s].view.flush(); err != nil {
			return fmt.Errorf("join: storing the %s rows: %w", j.side[s].name, err)
		}
	}
	return j.keyed.snapshot(target)
}

func (j *equiJoin) TakePersist() func(context.Context, *checkpoint.SubtaskState) error {
	return j.keyed.takePersist()
}

func (j *equiJoin) Release() {
	if j.out != nil {
		j.out.release()
		j.out = nil
	}
	j.keyed.release()
}

// joinOutput builds the output rows of one input batch, in order, from
// stored row bytes: the left and right columns, and the row kinds.
type joinOutput struct {
	schema    *arrow.Schema
	b         *array.RecordBuilder
	codec     [2]*rowCodec
	fields    [2][]array.Builder
	kinds     *array.Int8Builder // nil for append-only output
	rows      int
	changelog bool
}

func newJoinOutput(mem memory.Allocator, schema *arrow.Schema, left, right *rowCodec, changelog bool) *joinOutput {
	o := &joinOutput{schema: schema, b: array.NewRecordBuilder(mem, schema), codec: [2]*rowCodec{left, right}, changelog: changelog}
	nl, nr := len(left.cols), len(right.cols)
	all := o.b.Fields()
	o.fields[0], o.fields[1] = all[:nl], all[nl:nl+nr]
	if changelog {
		o.kinds = all[nl+nr].(*array.Int8Builder)
	}
	return o
}

// add appends one row: row (of side input) and other (of the other side,
// nil: padded with nulls); kind is its row kind.
func (o *joinOutput) add(input int, kind rowkind.Kind, row, other []byte) error {
	if !o.changelog && kind != rowkind.Insert {
		return fmt.Errorf("join: a %s row in an append-only join output (a bug: the join's inputs are append-only)", kind)
	}
	if err := o.codec[input].decode(row, o.fields[input]); err != nil {
		return fmt.Errorf("join: reading a stored %s row: %w", []string{"left", "right"}[input], err)
	}
	if other == nil {
		for _, f := range o.fields[1-input] {
			f.AppendNull()
		}
	} else if err := o.codec[1-input].decode(other, o.fields[1-input]); err != nil {
		return fmt.Errorf("join: reading a stored %s row: %w", []string{"left", "right"}[1-input], err)
	}
	if o.kinds != nil {
		o.kinds.Append(int8(kind))
	}
	o.rows++
	return nil
}

// flush emits the rows added since the last flush as one batch.
func (o *joinOutput) flush(ctx context.Context, emit operator.Emit) error {
	if o.rows == 0 {
		return nil
	}
	o.rows = 0
	return emit(ctx, o.b.NewRecordBatch())
}

func (o *joinOutput) release() { o.b.Release() }
