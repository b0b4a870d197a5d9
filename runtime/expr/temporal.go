package expr

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/scalar"
)

// Timestamps and durations: arithmetic, the .dt fields and truncate.
//
// A timestamp with a time zone gives its .dt fields and truncate in that
// zone's wall-clock time; a naive one (no tz) is read as UTC.

// dtFields are the calendar fields of .dt; each gives int64, as pyarrow's
// year()/month()/... and Flink's EXTRACT (BIGINT).
var dtFields = map[string]func(time.Time) int64{
	"year":   func(t time.Time) int64 { return int64(t.Year()) },
	"month":  func(t time.Time) int64 { return int64(t.Month()) },
	"day":    func(t time.Time) int64 { return int64(t.Day()) },
	"hour":   func(t time.Time) int64 { return int64(t.Hour()) },
	"minute": func(t time.Time) int64 { return int64(t.Minute()) },
}

func isTimestamp(t arrow.DataType) bool { return t.ID() == arrow.TIMESTAMP }
func isDuration(t arrow.DataType) bool  { return t.ID() == arrow.DURATION }

func unitOf(t arrow.DataType) (arrow.TimeUnit, bool) {
	switch v := t.(type) {
	case *arrow.TimestampType:
		return v.Unit, true
	case *arrow.DurationType:
		return v.Unit, true
	}
	return 0, false
}

// alignUnits casts timestamp and duration operands to their finest unit, as
// Arrow's kernels would. Doing it here, not in the kernel, matters: arrow-go
// v18.9.0's dispatch (replaceTemporalTypes) rewrites the unit of the
// operands' *TimestampType/*DurationType in place, which would change the
// input schema's types (and arrow's shared type singletons) under us.
func alignUnits(args []*Expr) {
	finest, mixed, seen := arrow.Second, false, false
	for _, a := range args {
		if u, ok := unitOf(a.typ); ok {
			if seen && u != finest {
				mixed = true
			}
			if !seen || u > finest {
				finest = u
			}
			seen = true
		}
	}
	if !mixed {
		return
	}
	for i, a := range args {
		var to arrow.DataType
		switch v := a.typ.(type) {
		case *arrow.TimestampType:
			to = &arrow.TimestampType{Unit: finest, TimeZone: v.TimeZone}
		case *arrow.DurationType:
			to = &arrow.DurationType{Unit: finest}
		}
		if to != nil && !arrow.TypeEqual(to, a.typ) {
			args[i] = &Expr{text: a.text, typ: to, column: -1, fn: "cast", castTo: to, args: []*Expr{a}}
		}
	}
}

const durationHint = `a duration (a datetime.timedelta or a string such as "5 min")`

// checkTemporalArithmetic explains what add and subtract accept around
// timestamps, before the kernels' generic "no kernel matching" message.
func checkTemporalArithmetic(fn string, a, b arrow.DataType) error {
	if !isTimestamp(a) && !isTimestamp(b) {
		return nil
	}
	switch fn {
	case "add":
		if isTimestamp(a) && isTimestamp(b) {
			return fmt.Errorf("cannot add two timestamps (%s + %s); subtract them to get a duration, or add %s", a, b, durationHint)
		}
		other := b
		if isTimestamp(b) {
			other = a
		}
		if !isDuration(other) {
			return fmt.Errorf("a timestamp can only be added to %s, not to %s", durationHint, other)
		}
	case "subtract":
		if !isTimestamp(a) {
			return fmt.Errorf("cannot subtract a timestamp (%s) from %s; write timestamp - duration or timestamp - timestamp", b, a)
		}
		if isTimestamp(b) {
			ta, tb := a.(*arrow.TimestampType), b.(*arrow.TimestampType)
			if ta.TimeZone != tb.TimeZone {
				return fmt.Errorf("cannot subtract timestamps of different time zones (%s - %s); cast one to the other's type first", a, b)
			}
			return nil
		}
		if !isDuration(b) {
			return fmt.Errorf("from a timestamp subtract %s or another timestamp, not %s", durationHint, b)
		}
	default:
		return fmt.Errorf("%s does not apply to timestamps (%s, %s); timestamps take + and - with durations, comparisons and .dt", fn, a, b)
	}
	return nil
}

func needTimestamp(what string, t arrow.DataType) error {
	if isTimestamp(t) {
		tz, err := t.(*arrow.TimestampType).GetZone()
		if err != nil || tz == nil {
			return fmt.Errorf("%s: unknown time zone in %s: %v", what, t, err)
		}
		return nil
	}
	return fmt.Errorf("%s needs a timestamp, got %s; parse or cast the column first, e.g. .cast(\"timestamp[ms]\")", what, t)
}

func compileDtField(out *Expr) error {
	if err := needTimestamp("dt."+out.fn, out.args[0].typ); err != nil {
		return err
	}
	out.typ = arrow.PrimitiveTypes.Int64
	return nil
}

// roundUnits are floor_temporal's fixed-length units, longest first.
var roundUnits = []struct {
	unit compute.RoundTemporalUnit
	ns   int64
}{
	{compute.RoundTemporalDay, int64(24 * time.Hour)},
	{compute.RoundTemporalHour, int64(time.Hour)},
	{compute.RoundTemporalMinute, int64(time.Minute)},
	{compute.RoundTemporalSecond, int64(time.Second)},
	{compute.RoundTemporalMillisecond, int64(time.Millisecond)},
	{compute.RoundTemporalMicrosecond, int64(time.Microsecond)},
	{compute.RoundTemporalNanosecond, 1},
}

func unitNanos(u arrow.TimeUnit) int64 {
	return int64(u.Multiplier())
}

// compileTruncate checks dt.truncate(duration): a timestamp and a positive
// constant duration that is a whole number of the timestamp's unit. It
// becomes arrow-go's floor_temporal, which floors from the epoch in the
// timestamp's wall-clock time (local time for a zoned timestamp), as
// pandas' dt.floor.
func compileTruncate(out *Expr) error {
	if err := needTimestamp("dt.truncate", out.args[0].typ); err != nil {
		return err
	}
	d, ok := out.args[1].lit.(*scalar.Duration)
	if !ok || !d.IsValid() {
		return fmt.Errorf("dt.truncate takes a constant duration (a datetime.timedelta or a string such as \"5 min\"), got %s of type %s", out.args[1].text, out.args[1].typ)
	}
	ns := int64(d.Value) * unitNanos(d.Type.(*arrow.DurationType).Unit)
	tsUnit := out.args[0].typ.(*arrow.TimestampType).Unit
	if ns <= 0 {
		return fmt.Errorf("dt.truncate needs a positive duration, got %s", time.Duration(ns))
	}
	if ns%unitNanos(tsUnit) != 0 {
		return fmt.Errorf("dt.truncate(%s) is not a whole number of the timestamp's unit (%s); cast the timestamp to a finer unit first", time.Duration(ns), tsUnit)
	}
	for _, u := range roundUnits {
		if ns%u.ns == 0 {
			out.round = &compute.RoundTemporalOptions{Multiple: ns / u.ns, Unit: u.unit}
			break
		}
	}
	out.typ = out.args[0].typ
	return nil
}

// dtField computes one calendar field of a timestamp column.
func dtField(ctx context.Context, field func(time.Time) int64, d compute.Datum, n int) (compute.Datum, error) {
	arr, err := toArray(ctx, d, n)
	if err != nil {
		return nil, err
	}
	defer arr.Release()
	ts := arr.(*array.Timestamp)
	toTime, err := ts.DataType().(*arrow.TimestampType).GetToTimeFunc()
	if err != nil {
		return nil, err
	}
	out := array.NewInt64Builder(compute.GetAllocator(ctx))
	defer out.Release()
	out.Reserve(n)
	for i, v := range ts.Values() {
		if ts.IsNull(i) {
			out.UnsafeAppendBoolToBitmap(false)
			continue
		}
		out.UnsafeAppend(field(toTime(v)))
	}
	res := out.NewArray()
	defer res.Release()
	return compute.NewDatum(res), nil
}

// toArray turns an operand into an array of n rows (a scalar is repeated);
// the caller releases it.
func toArray(ctx context.Context, d compute.Datum, n int) (arrow.Array, error) {
	switch v := d.(type) {
	case *compute.ArrayDatum:
		return v.MakeArray(), nil
	case *compute.ScalarDatum:
		return scalar.MakeArrayFromScalar(v.Value, n, compute.GetAllocator(ctx))
	}
	return nil, fmt.Errorf("unsupported operand %s", d.Kind())
}
