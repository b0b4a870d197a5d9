package operators

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flinkgo/flinkgo/runtime/rowkind"
	"github.com/flinkgo/flinkgo/state"
)

// A keyed aggregation over a changelog (docs/semantics.md#changelogs), as
// Flink's GroupAggFunction: a row of kind +I or +U accumulates, -U or -D
// retracts. sum, count and mean subtract. min and max keep, per key, the
// multiset of the values they saw (value -> count) in a map state of the
// Pebble backend, in the values' order, so that when the current minimum
// is retracted the next one is its first entry. Each group counts its rows
// (added minus retracted); a group whose count reaches zero is deleted (-D).

// multisets are the min/max aggregates' value multisets, by aggregate index
// (nil for the other aggregates), opened with the backend at the start.
type multisets []*state.Map[[]byte, int64]

// openMultisets opens the backend and registers one map state per min/max
// aggregate: a changelog input needs them from its first retraction.
func (p *aggProc) openMultisets() error {
	if err := p.keyed.open(); err != nil {
		return err
	}
	p.sets = make(multisets, len(p.aggs))
	for i, a := range p.aggs {
		if a.fn != "min" && a.fn != "max" && a.fn != "count_distinct" {
			continue
		}
		m, err := state.NewMap(p.keyed.backend, fmt.Sprintf("multiset-%d", i), state.BytesCodec{}, state.Int64Codec{}, p.ttlOptions()...)
		if err != nil {
			return err
		}
		p.sets[i] = m
	}
	return nil
}

// processChangelog folds a batch whose rows carry kinds into their groups.
func (p *aggProc) processChangelog(b arrow.RecordBatch, kinds *array.Int8, gids []int) error {
	n := len(gids)
	add, retract := p.targets[:n], make([]*accumulator, n)
	for i, a := range p.aggs {
		for row, g := range gids {
			acc := &p.list[g].acc[i]
			if rowkind.At(kinds, row).IsAccumulate() {
				add[row], retract[row] = acc, nil
			} else {
				add[row], retract[row] = nil, acc
			}
		}
		if a.fn == "count_distinct" {
			if err := p.updateDistinct(i, a, b, gids, add); err != nil {
				return fmt.Errorf("aggregate %s: %w", p.schema.Field(len(p.keys)+i).Name, err)
			}
			continue
		}
		accumulateColumn(a, b, add, nil)
		if set := p.sets[i]; set != nil {
			if err := p.updateMultiset(i, set, a, b, gids, add, retract); err != nil {
				return fmt.Errorf("aggregate %s: %w", p.schema.Field(len(p.keys)+i).Name, err)
			}
			continue
		}
		retractColumn(a, b, retract)
	}
	for row, g := range gids {
		if rowkind.At(kinds, row).IsAccumulate() {
			p.list[g].rows++
		} else {
			p.list[g].rows--
		}
	}
	return nil
}

// retractColumn takes aggregate a's column of b out of targets[row] (nil
// skips the row): sum, count and mean subtract.
func retractColumn(a aggSpec, b arrow.RecordBatch, targets []*accumulator) {
	if a.column < 0 {
		for _, t := range targets {
			if t != nil {
				t.count--
			}
		}
		return
	}
	col := b.Column(a.column)
	for row, acc := range targets {
		if acc == nil || col.IsNull(row) {
			continue
		}
		acc.count--
		if a.isInt {
			v := intValue(col, row)
			acc.isum -= v
			acc.fsum -= float64(v)
		} else {
			acc.fsum -= floatValue(col, row)
		}
	}
}

// updateMultiset adds the values of the add rows to each group's multiset
// and removes those of the retract rows, netted per group and value first
// (a -U/+U pair of the same value touches no state); then every group that
// had its minimum (maximum) retracted takes the new one from its
// multiset, which holds the batch's added values too.
func (p *aggProc) updateMultiset(i int, set *state.Map[[]byte, int64], a aggSpec, b arrow.RecordBatch, gids []int, add, retract []*accumulator) error {
	col := b.Column(a.column)
	type entry struct {
		group int
		value string
	}
	deltas := map[entry]int64{}
	var order []entry // first appearance: deterministic writes
	var lost []int    // groups with a retracted value, in order of first retraction
	seen := map[int]bool{}
	for row, g := range gids {
		if col.IsNull(row) {
			continue
		}
		p.valueBuf = orderedValue(p.valueBuf[:0], a, col, row)
		e := entry{g, string(p.valueBuf)}
		if _, ok := deltas[e]; !ok {
			order = append(order, e)
		}
		if add[row] != nil {
			deltas[e]++
			continue
		}
		deltas[e]--
		retract[row].count--
		if !seen[g] && p.mayBeExtreme(a, retract[row], p.valueBuf) {
			seen[g] = true
			lost = append(lost, g)
		}
	}
	for _, e := range order {
		delta := deltas[e]
		if delta == 0 {
			continue
		}
		key, value := p.list[e.group].stateKey, []byte(e.value)
		count, _, err := set.Get(key, value)
		if err != nil {
			return err
		}
		count += delta
		switch {
		case count < 0:
			return fmt.Errorf("retracts %s, a value the key never had", describeOrdered(a, value))
		case count == 0:
			err = set.Remove(key, value)
		default:
			err = set.Put(key, value, count)
		}
		if err != nil {
			return err
		}
	}
	for _, g := range lost {
		if err := p.resetExtreme(set, a, p.list[g].stateKey, &p.list[g].acc[i]); err != nil {
			return err
		}
	}
	return nil
}

// mayBeExtreme says whether retracting the orderedValue-encoded v can
// change acc's minimum (maximum): only when v is not above (below) it. The
// multiset then gives the new one; any other retraction leaves it, which
// spares a scan of the key's multiset in Pebble.
func (p *aggProc) mayBeExtreme(a aggSpec, acc *accumulator, v []byte) bool {
	var current []byte
	switch {
	case a.isStr:
		extreme := acc.min
		if a.fn == "max" {
			extreme = acc.max
		}
		s, ok := extreme.(string)
		if !ok {
			return true
		}
		current = append(p.extremeBuf[:0], s...)
	case !acc.seen:
		return true
	case a.isInt:
		x := acc.imin
		if a.fn == "max" {
			x = acc.imax
		}
		current = binary.BigEndian.AppendUint64(p.extremeBuf[:0], uint64(x)^(1<<63))
	default:
		x := acc.fmin
		if a.fn == "max" {
			x = acc.fmax
		}
		current = orderedFloatBits(p.extremeBuf[:0], x)
	}
	p.extremeBuf = current
	if a.fn == "min" {
		return bytes.Compare(v, current) <= 0
	}
	return bytes.Compare(v, current) >= 0
}

// describeOrdered shows a value orderedValue encoded, for errors.
func describeOrdered(a aggSpec, v []byte) string {
	switch {
	case a.isStr:
		return fmt.Sprintf("%q", v)
	case a.isInt:
		return fmt.Sprint(int64(binary.BigEndian.Uint64(v) ^ (1 << 63)))
	}
	return fmt.Sprint(orderedFloat(binary.BigEndian.Uint64(v)))
}

// errFound stops a multiset scan at the entry it looked for.
var errFound = errors.New("found")

// resetExtreme sets acc's minimum or maximum from the key's multiset
// (after a retraction; none left: no value seen).
func (p *aggProc) resetExtreme(set *state.Map[[]byte, int64], a aggSpec, key state.Key, acc *accumulator) error {
	var extreme []byte
	err := set.All(key, func(v []byte, _ int64) error {
		extreme = v
		if a.fn == "min" {
			return errFound // the first entry is the smallest value
		}
		return nil // the last is the largest
	})
	if err != nil && !errors.Is(err, errFound) {
		return err
	}
	if extreme == nil {
		acc.seen, acc.min, acc.max = false, nil, nil
		return nil
	}
	switch {
	case a.isStr:
		if a.fn == "min" {
			acc.min = string(extreme)
		} else {
			acc.max = string(extreme)
		}
	case a.isInt:
		v := int64(binary.BigEndian.Uint64(extreme) ^ (1 << 63))
		acc.seen = true
		if a.fn == "min" {
			acc.imin = v
		} else {
			acc.imax = v
		}
	default:
		v := orderedFloat(binary.BigEndian.Uint64(extreme))
		acc.seen = true
		if a.fn == "min" {
			acc.fmin = v
		} else {
			acc.fmax = v
		}
	}
	return nil
}

// orderedValue encodes a min/max value so that byte order is value order:
// integers big-endian with the sign bit flipped, floats as their IEEE bits
// made monotone, strings as they are.
func orderedValue(buf []byte, a aggSpec, col arrow.Array, row int) []byte {
	switch {
	case a.isStr:
		return append(buf, col.ValueStr(row)...)
	case a.isInt:
		return binary.BigEndian.AppendUint64(buf, uint64(intValue(col, row))^(1<<63))
	}
	return orderedFloatBits(buf, floatValue(col, row))
}

// orderedFloatBits appends v's IEEE bits made monotone.
func orderedFloatBits(buf []byte, v float64) []byte {
	bits := math.Float64bits(v)
	if bits&(1<<63) != 0 {
		bits = ^bits
	} else {
		bits |= 1 << 63
	}
	return binary.BigEndian.AppendUint64(buf, bits)
}

// orderedFloat decodes orderedValue's float encoding.
func orderedFloat(bits uint64) float64 {
	if bits&(1<<63) != 0 {
		return math.Float64frombits(bits &^ (1 << 63))
	}
	return math.Float64frombits(^bits)
}

// outputValue is aggregate a's result in acc, to compare what a group
// emitted with what it would emit now (equal: no -U/+U, as Flink).
func outputValue(a aggSpec, acc *accumulator) any {
	switch a.fn {
	case "count":
		return acc.count
	case "sum":
		return sumValue(a, acc)
	case "mean":
		if acc.count > 0 {
			return acc.fsum / float64(acc.count)
		}
	case "min":
		if acc.seen {
			return pick(a.isInt, acc.imin, acc.fmin)
		}
		return acc.min
	case "max":
		if acc.seen {
			return pick(a.isInt, acc.imax, acc.fmax)
		}
		return acc.max
	case "count_distinct":
		return acc.count
	}
	return nil
}
