package exec

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/udf/proto/planpb"
)

// aggProc groups rows by key and emits one row per group when its input
// ends: keys first, then the aggregates, as the node's schema declares.
type aggProc struct {
	noTimer
	keys   []int
	aggs   []aggSpec
	schema *arrow.Schema
	mem    memory.Allocator
	groups map[string]*group
	order  []string // groups in order of first appearance
}

type aggSpec struct {
	fn     string
	column int // -1 for count(*)
	isInt  bool
	isStr  bool
}

type group struct {
	key  []string // ValueStr of each key, "" when null
	null []bool
	acc  []accumulator
}

type accumulator struct {
	count int64
	isum  int64
	fsum  float64
	min   any
	max   any
}

func newAggProc(node *planpb.Node, in, out *arrow.Schema, mem memory.Allocator) (*aggProc, error) {
	spec := node.GetKeyedAggregate()
	p := &aggProc{schema: out, mem: mem, groups: map[string]*group{}}
	for _, k := range spec.GetKeys() {
		idx := in.FieldIndices(k)
		if len(idx) == 0 {
			return nil, fmt.Errorf("key %q is not a column of %s", k, in)
		}
		p.keys = append(p.keys, idx[0])
	}
	for _, a := range spec.GetAggregates() {
		s := aggSpec{fn: a.GetFunction(), column: -1}
		switch s.fn {
		case "sum", "count", "min", "max", "mean":
		default:
			return nil, fmt.Errorf("unknown aggregate %q (sum, count, min, max, mean)", s.fn)
		}
		if a.GetColumn() != "" {
			idx := in.FieldIndices(a.GetColumn())
			if len(idx) == 0 {
				return nil, fmt.Errorf("aggregate %s(%s): unknown column; columns are %s", s.fn, a.GetColumn(), in)
			}
			s.column = idx[0]
			t := in.Field(idx[0]).Type
			s.isInt = arrow.IsInteger(t.ID())
			s.isStr = arrow.IsBaseBinary(t.ID())
			if s.isStr && (s.fn == "sum" || s.fn == "mean") {
				return nil, fmt.Errorf("aggregate %s(%s): the column is %s, not numeric", s.fn, a.GetColumn(), t)
			}
		} else if s.fn != "count" {
			return nil, fmt.Errorf("aggregate %s needs a column", s.fn)
		}
		p.aggs = append(p.aggs, s)
	}
	if out.NumFields() != len(p.keys)+len(p.aggs) {
		return nil, fmt.Errorf("declared schema %s does not have %d keys and %d aggregates", out, len(p.keys), len(p.aggs))
	}
	return p, nil
}

func (p *aggProc) process(_ context.Context, _ int, b arrow.RecordBatch, _ emitFunc) error {
	var sb strings.Builder
	for row := range int(b.NumRows()) {
		sb.Reset()
		for _, k := range p.keys {
			col := b.Column(k)
			if col.IsNull(row) {
				sb.WriteString("N;")
			} else {
				v := col.ValueStr(row)
				fmt.Fprintf(&sb, "%d:%s;", len(v), v)
			}
		}
		g, ok := p.groups[sb.String()]
		if !ok {
			g = &group{acc: make([]accumulator, len(p.aggs))}
			for _, k := range p.keys {
				col := b.Column(k)
				g.null = append(g.null, col.IsNull(row))
				if !col.IsNull(row) {
					g.key = append(g.key, col.ValueStr(row))
				} else {
					g.key = append(g.key, "")
				}
			}
			p.groups[sb.String()] = g
			p.order = append(p.order, sb.String())
		}
		for i, a := range p.aggs {
			acc := &g.acc[i]
			if a.column < 0 {
				acc.count++
				continue
			}
			col := b.Column(a.column)
			if col.IsNull(row) {
				continue // SQL: aggregates skip nulls
			}
			acc.count++
			switch {
			case a.isStr:
				v := col.ValueStr(row)
				if acc.min == nil || v < acc.min.(string) {
					acc.min = v
				}
				if acc.max == nil || v > acc.max.(string) {
					acc.max = v
				}
			case a.isInt:
				v := intValue(col, row)
				acc.isum += v
				acc.fsum += float64(v)
				if acc.min == nil || v < acc.min.(int64) {
					acc.min = v
				}
				if acc.max == nil || v > acc.max.(int64) {
					acc.max = v
				}
			default:
				v := floatValue(col, row)
				acc.fsum += v
				if acc.min == nil || v < acc.min.(float64) {
					acc.min = v
				}
				if acc.max == nil || v > acc.max.(float64) {
					acc.max = v
				}
			}
		}
	}
	return nil
}

func intValue(col arrow.Array, row int) int64 {
	switch c := col.(type) {
	case *array.Int8:
		return int64(c.Value(row))
	case *array.Int16:
		return int64(c.Value(row))
	case *array.Int32:
		return int64(c.Value(row))
	case *array.Int64:
		return c.Value(row)
	case *array.Uint8:
		return int64(c.Value(row))
	case *array.Uint16:
		return int64(c.Value(row))
	case *array.Uint32:
		return int64(c.Value(row))
	case *array.Uint64:
		return int64(c.Value(row))
	}
	v, _ := strconv.ParseInt(col.ValueStr(row), 10, 64)
	return v
}

func floatValue(col arrow.Array, row int) float64 {
	switch c := col.(type) {
	case *array.Float64:
		return c.Value(row)
	case *array.Float32:
		return float64(c.Value(row))
	}
	v, err := strconv.ParseFloat(col.ValueStr(row), 64)
	if err != nil {
		return math.NaN()
	}
	return v
}

// finish emits every group, in order of first appearance.
func (p *aggProc) finish(ctx context.Context, emit emitFunc) error {
	if len(p.order) == 0 {
		return nil
	}
	b := array.NewRecordBuilder(p.mem, p.schema)
	defer b.Release()
	for _, key := range p.order {
		g := p.groups[key]
		for i := range p.keys {
			if g.null[i] {
				b.Field(i).AppendNull()
			} else if err := b.Field(i).AppendValueFromString(g.key[i]); err != nil {
				return fmt.Errorf("key %s: %w", p.schema.Field(i).Name, err)
			}
		}
		for i, a := range p.aggs {
			if err := appendAggregate(b.Field(len(p.keys)+i), a, g.acc[i]); err != nil {
				return fmt.Errorf("aggregate %s: %w", p.schema.Field(len(p.keys)+i).Name, err)
			}
		}
	}
	return emit(ctx, b.NewRecordBatch())
}

func appendAggregate(b array.Builder, a aggSpec, acc accumulator) error {
	var v any
	switch a.fn {
	case "count":
		v = acc.count
	case "sum":
		if a.isInt {
			v = acc.isum
		} else {
			v = acc.fsum
		}
	case "mean":
		if acc.count > 0 {
			v = acc.fsum / float64(acc.count)
		}
	case "min":
		v = acc.min
	case "max":
		v = acc.max
	}
	if v == nil {
		b.AppendNull()
		return nil
	}
	switch b := b.(type) {
	case *array.Int64Builder:
		switch x := v.(type) {
		case int64:
			b.Append(x)
			return nil
		case float64:
			b.Append(int64(x))
			return nil
		}
	case *array.Float64Builder:
		switch x := v.(type) {
		case int64:
			b.Append(float64(x))
			return nil
		case float64:
			b.Append(x)
			return nil
		}
	}
	switch x := v.(type) {
	case float64:
		return b.AppendValueFromString(strconv.FormatFloat(x, 'g', -1, 64))
	case int64:
		return b.AppendValueFromString(strconv.FormatInt(x, 10))
	default:
		return b.AppendValueFromString(fmt.Sprint(x))
	}
}
