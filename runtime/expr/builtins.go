package expr

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/compute"
)

// Numeric built-ins: floor_divide (Python's //), abs, round, floor, ceil,
// and coalesce. A null operand gives null, except in coalesce.
//
// floor_divide rounds the quotient toward negative infinity, as Python
// does: integers give int64 and a zero divisor is an error (as Flink SQL's
// and Spark's ANSI integer division, and as % here); otherwise float64,
// where x // 0 is inf, -inf or NaN as in pandas and numpy.

var (
	errDivideByZero = errors.New("integer division by zero (//): the divisor is 0 in at least one row; filter those rows or divide floats, where x // 0.0 is inf")
	errDivOverflow  = errors.New("integer overflow in //: the minimum int64 divided by -1")
)

func compileFloorDivide(out *Expr) error {
	for _, a := range out.args {
		if !isNumber(a.typ) {
			return fmt.Errorf("// needs numbers, got %s (%s)", a.text, a.typ)
		}
	}
	out.typ = moduloType(out.args[0].typ, out.args[1].typ)
	out.evalFn = func(ctx context.Context, args []compute.Datum, n int) (compute.Datum, error) {
		return floorDivide(ctx, out.typ, args, n)
	}
	return nil
}

// floorDivide computes args[0] // args[1] for n rows, as Python does.
func floorDivide(ctx context.Context, typ arrow.DataType, args []compute.Datum, n int) (compute.Datum, error) {
	return numericBinary(ctx, typ, args, n, func(x, y int64) (int64, error) {
		switch {
		case y == 0:
			return 0, errDivideByZero
		case y == -1 && x == math.MinInt64:
			return 0, errDivOverflow
		}
		q := x / y
		if (x%y != 0) && ((x < 0) != (y < 0)) {
			q-- // Go truncates toward zero; Python floors
		}
		return q, nil
	}, pyFloorDivide)
}

// pyFloorDivide is CPython's float floor division (float_floor_div), so
// 7.0 // 0.1 is 69.0 as in Python and numpy, where floor(7.0 / 0.1) is 70.
func pyFloorDivide(x, y float64) float64 {
	if y == 0 {
		return x / y // inf, -inf or NaN, as numpy
	}
	mod := math.Mod(x, y)
	div := (x - mod) / y
	if mod != 0 && (y < 0) != (mod < 0) {
		div--
	}
	if div == 0 {
		return math.Copysign(0, x/y)
	}
	floor := math.Floor(div)
	if div-floor > 0.5 {
		floor++
	}
	return floor
}

func isNumber(t arrow.DataType) bool {
	return arrow.IsInteger(t.ID()) || arrow.IsFloating(t.ID())
}

// compileUnaryNumeric checks abs, round, floor and ceil: a number in, the
// same type out. round takes a constant number of decimals (default 0) and
// rounds half away from zero, as Spark's and Flink SQL's ROUND. Integers
// are already whole: floor, ceil and round with decimals >= 0 return them.
func compileUnaryNumeric(out *Expr) error {
	x := out.args[0]
	if !isNumber(x.typ) && x.typ.ID() != arrow.NULL {
		return fmt.Errorf("%s needs a number, got %s (%s); cast it first, e.g. .cast('double')", out.fn, x.text, x.typ)
	}
	out.typ = x.typ
	var opts compute.FunctionOptions
	switch out.fn {
	case "round":
		digits := int64(0)
		if len(out.args) == 2 {
			var err error
			if digits, err = constInt("round's decimals", out.args[1]); err != nil {
				return err
			}
		} else if len(out.args) > 2 {
			return fmt.Errorf("round takes the value and a number of decimals, got %d argument(s)", len(out.args))
		}
		if digits < -18 || digits > 18 {
			return fmt.Errorf("round: decimals must be between -18 and 18, got %d", digits)
		}
		if arrow.IsInteger(x.typ.ID()) && digits < 0 {
			return fmt.Errorf("round of the integer %s to %d decimals is not supported; write (x // 10**k) * 10**k or cast to double first", x.text, digits)
		}
		opts = &compute.RoundOptions{NDigits: digits, Mode: compute.RoundHalfTowardsInfinity}
		out.args = out.args[:1]
	default:
		if len(out.args) != 1 {
			return fmt.Errorf("%s takes one argument, got %d", out.fn, len(out.args))
		}
	}
	if x.typ.ID() == arrow.NULL || (arrow.IsInteger(x.typ.ID()) && out.fn != "abs") {
		out.evalFn = func(_ context.Context, args []compute.Datum, _ int) (compute.Datum, error) {
			return retained(args[0]), nil
		}
		return nil
	}
	kernel := out.fn // arrow-go's abs is checked: abs(min int64) is an error
	out.evalFn = func(ctx context.Context, args []compute.Datum, _ int) (compute.Datum, error) {
		return compute.CallFunction(ctx, kernel, opts, args[0])
	}
	return nil
}

// retained returns d with one more reference, for a function that gives
// its argument back (eval releases the arguments).
func retained(d compute.Datum) compute.Datum {
	switch v := d.(type) {
	case *compute.ArrayDatum:
		a := v.MakeArray()
		defer a.Release()
		return compute.NewDatum(a)
	case *compute.ScalarDatum:
		return compute.NewDatum(v.Value)
	}
	return d
}

// compileCoalesce makes coalesce(a, b, ...) the first non-null argument of
// each row: it is case_when(a is not null, a, b is not null, b, ..., last),
// whose common-type rules and evaluation it shares.
func compileCoalesce(out *Expr) error {
	if len(out.args) < 2 {
		return fmt.Errorf("coalesce takes at least two values, got %d", len(out.args))
	}
	types := make([]arrow.DataType, len(out.args))
	for i, a := range out.args {
		types[i] = a.typ
	}
	if _, err := commonTypeOf("coalesce values", types); err != nil {
		return err
	}
	last := len(out.args) - 1
	branches := make([]*Expr, 0, 2*last+1)
	for _, a := range out.args[:last] {
		notNull := &Expr{text: a.text + ".is_not_null()", typ: arrow.FixedWidthTypes.Boolean, column: -1, fn: "is_not_null", args: []*Expr{a}}
		branches = append(branches, notNull, a)
	}
	out.args = append(branches, out.args[last])
	if err := compileCaseWhen(out); err != nil {
		return err
	}
	out.fn = "case_when"
	return nil
}
