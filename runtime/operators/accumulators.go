package operators

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flinkgo/flinkgo/runtime/plan"
)

// The built-in aggregates shared by the keyed aggregation and the window
// aggregation: one accumulator per (group, aggregate), filled column-wise,
// mergeable (window slices and sessions merge), encoded into keyed state.

// keyedAggregateFunctions and windowAggregateFunctions are the aggregates
// each operator offers; first and last need an event time.
var (
	keyedAggregateFunctions  = []string{"sum", "count", "min", "max", "mean", "count_distinct"}
	windowAggregateFunctions = []string{"sum", "count", "min", "max", "mean", "first", "last", "count_distinct"}
)

type aggSpec struct {
	fn     string
	column int // -1 for count(*)
	isInt  bool
	isStr  bool
}

// parseAggSpec resolves one plan aggregate against the input schema.
func parseAggSpec(a *plan.Aggregate, in *arrow.Schema, allowed []string) (aggSpec, error) {
	s := aggSpec{fn: a.Function, column: -1}
	if !slices.Contains(allowed, s.fn) {
		return s, fmt.Errorf("unknown aggregate %q (%s)", s.fn, strings.Join(allowed, ", "))
	}
	if a.Column == "" {
		if s.fn != "count" {
			return s, fmt.Errorf("aggregate %s needs a column", s.fn)
		}
		return s, nil
	}
	idx := in.FieldIndices(a.Column)
	if len(idx) == 0 {
		return s, fmt.Errorf("aggregate %s(%s): unknown column; columns are %s", s.fn, a.Column, in)
	}
	s.column = idx[0]
	t := in.Field(idx[0]).Type
	s.isInt = arrow.IsInteger(t.ID())
	s.isStr = arrow.IsBaseBinary(t.ID())
	if s.isStr && (s.fn == "sum" || s.fn == "mean") {
		return s, fmt.Errorf("aggregate %s(%s): the column is %s, not numeric", s.fn, a.Column, t)
	}
	// The accumulators keep int64, float64 or strings: a uint64 above
	// 2^63-1 would come out wrong, so it is refused. Timestamps, dates and
	// durations compare by their physical int64 (same type, same unit).
	numeric := (s.isInt && t.ID() != arrow.UINT64) || arrow.IsFloating(t.ID())
	if temporal(t) && (s.fn == "min" || s.fn == "max") {
		s.isInt, numeric = true, true
	}
	switch {
	case (s.fn == "sum" || s.fn == "mean") && !numeric:
		return s, fmt.Errorf("aggregate %s(%s): columns of type %s are not supported (signed and unsigned integers up to 32 bits, int64, floats are): cast the column first, e.g. col(%q).cast(\"int64\")",
			s.fn, a.Column, t, a.Column)
	case (s.fn == "min" || s.fn == "max") && !numeric && !s.isStr:
		return s, fmt.Errorf("aggregate %s(%s): columns of type %s are not supported yet (integers but uint64, floats, strings, timestamps, dates and durations are): cast the column first, e.g. col(%q).cast(\"int64\")",
			s.fn, a.Column, t, a.Column)
	}
	if (s.fn == "first" || s.fn == "last") && !scalarSupported(t) {
		return s, fmt.Errorf("aggregate %s(%s): columns of type %s are not supported (numbers, strings, booleans, timestamps, dates, durations are)",
			s.fn, a.Column, t)
	}
	return s, nil
}

type accumulator struct {
	count      int64
	isum       int64
	fsum       float64
	seen       bool // a numeric value came
	imin, imax int64
	fmin, fmax float64
	min, max   any // strings
	// ext holds what only window aggregates need (first, last,
	// count_distinct); nil for the others.
	ext *accExt
}

// accExt is the state of first, last (by event time) and count_distinct.
type accExt struct {
	hasFirst, hasLast bool
	firstTs, lastTs   int64
	first, last       any // int64, float64, string or bool
	distinct          map[string]struct{}
}

func (acc *accumulator) addFloat(v float64) {
	acc.count++
	acc.fsum += v
	if !acc.seen || v < acc.fmin {
		acc.fmin = v
	}
	if !acc.seen || v > acc.fmax {
		acc.fmax = v
	}
	acc.seen = true
}

// merge folds o into acc, as if acc had seen o's values too.
func (acc *accumulator) merge(o *accumulator) {
	acc.count += o.count
	acc.isum += o.isum
	acc.fsum += o.fsum
	if o.seen {
		if !acc.seen {
			acc.imin, acc.imax, acc.fmin, acc.fmax = o.imin, o.imax, o.fmin, o.fmax
		} else {
			acc.imin, acc.imax = min(acc.imin, o.imin), max(acc.imax, o.imax)
			acc.fmin, acc.fmax = min(acc.fmin, o.fmin), max(acc.fmax, o.fmax)
		}
		acc.seen = true
	}
	if s, ok := o.min.(string); ok && (acc.min == nil || s < acc.min.(string)) {
		acc.min = s
	}
	if s, ok := o.max.(string); ok && (acc.max == nil || s > acc.max.(string)) {
		acc.max = s
	}
	if o.ext == nil {
		return
	}
	e := acc.extension()
	if o.ext.hasFirst && (!e.hasFirst || o.ext.firstTs < e.firstTs) {
		e.hasFirst, e.firstTs, e.first = true, o.ext.firstTs, o.ext.first
	}
	if o.ext.hasLast && (!e.hasLast || o.ext.lastTs >= e.lastTs) {
		e.hasLast, e.lastTs, e.last = true, o.ext.lastTs, o.ext.last
	}
	for v := range o.ext.distinct {
		if e.distinct == nil {
			e.distinct = make(map[string]struct{}, len(o.ext.distinct))
		}
		e.distinct[v] = struct{}{}
	}
}

func (acc *accumulator) extension() *accExt {
	if acc.ext == nil {
		acc.ext = &accExt{}
	}
	return acc.ext
}

// accumulateColumn folds aggregate a's column of b into targets[row] for
// every row, column-wise; a nil target skips its row. ts are the rows'
// event times, for first and last (nil elsewhere).
func accumulateColumn(a aggSpec, b arrow.RecordBatch, targets []*accumulator, ts []int64) {
	if a.column < 0 {
		for _, t := range targets {
			if t != nil {
				t.count++
			}
		}
		return
	}
	col := b.Column(a.column)
	switch a.fn {
	case "first", "last", "count_distinct":
		accumulateExt(a, col, targets, ts)
		return
	}
	if f, ok := col.(*array.Float64); ok && col.NullN() == 0 {
		// The common case, without per-row checks and type switches.
		for row, v := range f.Float64Values() {
			if t := targets[row]; t != nil {
				t.addFloat(v)
			}
		}
		return
	}
	for row, acc := range targets {
		if acc == nil || col.IsNull(row) {
			continue // SQL: aggregates skip nulls
		}
		switch {
		case a.isStr:
			v := col.ValueStr(row)
			acc.count++
			if acc.min == nil || v < acc.min.(string) {
				acc.min = v
			}
			if acc.max == nil || v > acc.max.(string) {
				acc.max = v
			}
		case a.isInt:
			v := intValue(col, row)
			acc.count++
			acc.isum += v
			acc.fsum += float64(v)
			if !acc.seen || v < acc.imin {
				acc.imin = v
			}
			if !acc.seen || v > acc.imax {
				acc.imax = v
			}
			acc.seen = true
		default:
			acc.addFloat(floatValue(col, row))
		}
	}
}

// accumulateExt folds first, last (the non-null value of the earliest and
// latest event time; ties: the first and the last to arrive) and
// count_distinct.
func accumulateExt(a aggSpec, col arrow.Array, targets []*accumulator, ts []int64) {
	var key []byte
	for row, acc := range targets {
		if acc == nil || col.IsNull(row) {
			continue
		}
		e := acc.extension()
		switch a.fn {
		case "first":
			if !e.hasFirst || ts[row] < e.firstTs {
				e.hasFirst, e.firstTs, e.first = true, ts[row], scalarAt(col, row)
			}
		case "last":
			if !e.hasLast || ts[row] >= e.lastTs {
				e.hasLast, e.lastTs, e.last = true, ts[row], scalarAt(col, row)
			}
		case "count_distinct":
			key = appendKey(key[:0], col, row)
			if e.distinct == nil {
				e.distinct = map[string]struct{}{}
			}
			if _, ok := e.distinct[string(key)]; !ok {
				e.distinct[string(key)] = struct{}{}
			}
		}
	}
}

// sumValue is sum's result: nil (NULL, as SQL, Flink and Arrow) when no
// non-null value is in the group. acc.count counts the column's non-null
// values, added minus retracted, so a retraction of the last one gives
// NULL again (Flink's SumWithRetractAggFunction keeps such a count too).
func sumValue(a aggSpec, acc *accumulator) any {
	switch {
	case acc.count == 0:
		return nil
	case a.isInt:
		return acc.isum
	default:
		return acc.fsum
	}
}

func pick(isInt bool, i int64, f float64) any {
	if isInt {
		return i
	}
	return f
}

// temporal says whether t is a timestamp, date or duration: an int64 of
// its unit, which orders as the values do.
func temporal(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.TIMESTAMP, arrow.DATE32, arrow.DATE64, arrow.DURATION:
		return true
	}
	return false
}

// intValue is the int64 of an integer column's value, or the physical
// value of a temporal one.
func intValue(col arrow.Array, row int) int64 {
	switch c := col.(type) {
	case *array.Timestamp:
		return int64(c.Value(row))
	case *array.Date32:
		return int64(c.Value(row))
	case *array.Date64:
		return int64(c.Value(row))
	case *array.Duration:
		return int64(c.Value(row))
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

// scalarSupported says whether first and last can keep values of type t.
func scalarSupported(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64,
		arrow.FLOAT32, arrow.FLOAT64, arrow.STRING, arrow.LARGE_STRING, arrow.BOOL,
		arrow.TIMESTAMP, arrow.DATE32, arrow.DATE64, arrow.DURATION:
		return true
	}
	return false
}

// scalarAt is the value of a column of a scalarSupported type: int64 for
// integers, timestamps, dates and durations (their physical value),
// float64, string or bool.
func scalarAt(col arrow.Array, row int) any {
	switch c := col.(type) {
	case *array.Float32, *array.Float64:
		return floatValue(col, row)
	case *array.String:
		return c.Value(row)
	case *array.LargeString:
		return c.Value(row)
	case *array.Boolean:
		return c.Value(row)
	}
	return intValue(col, row) // integers, timestamps, dates, durations
}

// appendScalar appends what scalarAt returned to a builder of the column's
// type.
func appendScalar(b array.Builder, v any) error {
	switch b := b.(type) {
	case *array.TimestampBuilder:
		b.Append(arrow.Timestamp(v.(int64)))
	case *array.Date32Builder:
		b.Append(arrow.Date32(v.(int64)))
	case *array.Date64Builder:
		b.Append(arrow.Date64(v.(int64)))
	case *array.DurationBuilder:
		b.Append(arrow.Duration(v.(int64)))
	case *array.BooleanBuilder:
		b.Append(v.(bool))
	case *array.StringBuilder:
		b.Append(v.(string))
	case *array.LargeStringBuilder:
		b.Append(v.(string))
	default:
		switch x := v.(type) {
		case int64:
			return b.AppendValueFromString(strconv.FormatInt(x, 10))
		case float64:
			return b.AppendValueFromString(strconv.FormatFloat(x, 'g', -1, 64))
		}
		return fmt.Errorf("cannot append %T to %T", v, b)
	}
	return nil
}

func appendAggregate(b array.Builder, a aggSpec, acc accumulator) error {
	var v any
	switch a.fn {
	case "count":
		v = acc.count
	case "sum":
		v = sumValue(a, &acc)
	case "mean":
		if acc.count > 0 {
			v = acc.fsum / float64(acc.count)
		}
	case "min":
		v = acc.min
		if acc.seen {
			v = pick(a.isInt, acc.imin, acc.fmin)
		}
	case "max":
		v = acc.max
		if acc.seen {
			v = pick(a.isInt, acc.imax, acc.fmax)
		}
	case "count_distinct":
		v = acc.count // keyed: the distinct values in the key's value set (aggdistinct.go)
		if acc.ext != nil {
			v = int64(len(acc.ext.distinct)) // windows
		}
	case "first", "last":
		e := acc.ext
		switch {
		case e == nil || (a.fn == "first" && !e.hasFirst) || (a.fn == "last" && !e.hasLast):
			b.AppendNull()
			return nil
		case a.fn == "first":
			return appendScalar(b, e.first)
		default:
			return appendScalar(b, e.last)
		}
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
	switch b.(type) {
	case *array.TimestampBuilder, *array.Date32Builder, *array.Date64Builder, *array.DurationBuilder:
		if x, ok := v.(int64); ok {
			return appendScalar(b, x) // min or max of a temporal column: its physical value
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

// appendAccumulator appends acc's fields but ext (the keyed aggregation's
// state format); appendAccExt appends ext.
func appendAccumulator(buf []byte, a *accumulator) []byte {
	buf = binary.AppendVarint(buf, a.count)
	buf = binary.AppendVarint(buf, a.isum)
	buf = binary.LittleEndian.AppendUint64(buf, math.Float64bits(a.fsum))
	buf = appendBool(buf, a.seen)
	buf = binary.AppendVarint(buf, a.imin)
	buf = binary.AppendVarint(buf, a.imax)
	buf = binary.LittleEndian.AppendUint64(buf, math.Float64bits(a.fmin))
	buf = binary.LittleEndian.AppendUint64(buf, math.Float64bits(a.fmax))
	for _, v := range []any{a.min, a.max} {
		s, ok := v.(string)
		buf = appendBool(buf, ok)
		if ok {
			buf = appendString(buf, s)
		}
	}
	return buf
}

func (r *groupReader) accumulator(a *accumulator) {
	a.count, a.isum, a.fsum, a.seen = r.varint(), r.varint(), r.float(), r.bool()
	a.imin, a.imax, a.fmin, a.fmax = r.varint(), r.varint(), r.float(), r.float()
	if r.bool() {
		a.min = r.string()
	}
	if r.bool() {
		a.max = r.string()
	}
}

// Scalar tags of the state format.
const (
	scalarInt    = 'i'
	scalarFloat  = 'f'
	scalarString = 's'
	scalarBool   = 'b'
)

func appendAccExt(buf []byte, e *accExt) []byte {
	buf = appendBool(buf, e != nil)
	if e == nil {
		return buf
	}
	for _, part := range []struct {
		has bool
		ts  int64
		v   any
	}{{e.hasFirst, e.firstTs, e.first}, {e.hasLast, e.lastTs, e.last}} {
		buf = appendBool(buf, part.has)
		if !part.has {
			continue
		}
		buf = binary.AppendVarint(buf, part.ts)
		switch x := part.v.(type) {
		case int64:
			buf = binary.AppendVarint(append(buf, scalarInt), x)
		case float64:
			buf = binary.LittleEndian.AppendUint64(append(buf, scalarFloat), math.Float64bits(x))
		case string:
			buf = appendString(append(buf, scalarString), x)
		case bool:
			buf = appendBool(append(buf, scalarBool), x)
		}
	}
	buf = binary.AppendUvarint(buf, uint64(len(e.distinct)))
	for v := range e.distinct {
		buf = appendString(buf, v)
	}
	return buf
}

func (r *groupReader) accExt() *accExt {
	if !r.bool() {
		return nil
	}
	e := &accExt{}
	for i := range 2 {
		if !r.bool() {
			continue
		}
		ts := r.varint()
		var v any
		switch tag := r.byte(); tag {
		case scalarInt:
			v = r.varint()
		case scalarFloat:
			v = r.float()
		case scalarString:
			v = r.string()
		case scalarBool:
			v = r.bool()
		default:
			r.err, r.data = errShortGroup, nil
		}
		if i == 0 {
			e.hasFirst, e.firstTs, e.first = true, ts, v
		} else {
			e.hasLast, e.lastTs, e.last = true, ts, v
		}
	}
	if n := r.uvarint(); n > 0 {
		e.distinct = make(map[string]struct{}, min(n, 1<<16))
		for range n {
			if r.err != nil {
				break
			}
			e.distinct[r.string()] = struct{}{}
		}
	}
	return e
}

func (r *groupReader) byte() byte {
	if len(r.data) < 1 {
		r.err, r.data = errShortGroup, nil
		return 0
	}
	v := r.data[0]
	r.data = r.data[1:]
	return v
}
