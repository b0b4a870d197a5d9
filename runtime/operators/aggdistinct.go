package operators

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
)

// count_distinct in a keyed aggregation keeps, per key, the multiset of
// the non-null values it saw (value -> count) in a map state of the Pebble
// backend, as min and max do over a changelog (aggretract.go): keyed state,
// so a checkpoint holds it and a rescale moves it with its key group. The
// group's accumulator count is the number of values whose count is above
// zero; a retracted row (-U, -D) takes its value's count down, and the
// value leaves the set when that reaches zero, as Flink's distinct
// aggregates over a retract stream.

func (p *aggProc) hasCountDistinct() bool {
	for _, a := range p.aggs {
		if a.fn == "count_distinct" {
			return true
		}
	}
	return false
}

// updateDistinct adds the values of the rows with an add target to their
// group's set and removes the others' (a nil add[row] is a retraction),
// netted per group and value first.
func (p *aggProc) updateDistinct(i int, a aggSpec, b arrow.RecordBatch, gids []int, add []*accumulator) error {
	set := p.sets[i]
	col := b.Column(a.column)
	type entry struct {
		group int
		value string
	}
	deltas := map[entry]int64{}
	var order []entry // first appearance: deterministic writes
	for row, g := range gids {
		if col.IsNull(row) {
			continue // SQL: COUNT(DISTINCT x) skips nulls
		}
		p.valueBuf = appendKey(p.valueBuf[:0], col, row)
		e := entry{g, string(p.valueBuf)}
		if _, ok := deltas[e]; !ok {
			order = append(order, e)
		}
		if add[row] != nil {
			deltas[e]++
		} else {
			deltas[e]--
		}
	}
	for _, e := range order {
		delta := deltas[e]
		if delta == 0 {
			continue
		}
		g := p.list[e.group]
		key, value := g.stateKey, []byte(e.value)
		before, _, err := set.Get(key, value)
		if err != nil {
			return err
		}
		after := before + delta
		switch {
		case after < 0:
			return fmt.Errorf("retracts a value the key never had (%d of it left)", before)
		case after == 0:
			err = set.Remove(key, value)
		default:
			err = set.Put(key, value, after)
		}
		if err != nil {
			return err
		}
		acc := &g.acc[i]
		if before == 0 && after > 0 {
			acc.count++
		} else if before > 0 && after == 0 {
			acc.count--
		}
	}
	return nil
}
