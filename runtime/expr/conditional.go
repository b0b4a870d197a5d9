package expr

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"
)

// is_in, between and case_when, with SQL's null rules:
//   - x.is_in(values) is null when x is null, true when x equals a value,
//     and otherwise null if the values hold a null, else false (SQL's IN);
//   - x.between(lo, hi) is (x >= lo) AND (x <= hi) in three-valued logic;
//   - a when condition that is null counts as false, as in SQL's CASE.

// compileIsIn checks that the values are constants of x's type and builds
// the value set once.
func compileIsIn(out *Expr) error {
	x := out.args[0]
	if x.typ.ID() == arrow.NULL {
		return fmt.Errorf("is_in on a null-typed value; give it a type with .cast(...)")
	}
	values := make([]arrow.Array, 0, len(out.args)-1)
	defer func() {
		for _, v := range values {
			v.Release()
		}
	}()
	mem := memory.NewGoAllocator() // the set lives as long as the plan
	for _, a := range out.args[1:] {
		if a.lit == nil {
			return fmt.Errorf("is_in takes constant values, got the expression %s; compare with == and combine with | instead", a.text)
		}
		sc := a.lit
		if !sc.IsValid() {
			sc = scalar.MakeNullScalar(x.typ)
		} else if !arrow.TypeEqual(sc.DataType(), x.typ) {
			cast, err := sc.CastTo(x.typ)
			if err == nil {
				// Scalar casts may truncate (2.5 to int64 is 2): only exact ones match.
				var back scalar.Scalar
				if back, err = cast.CastTo(sc.DataType()); err == nil && !scalar.Equals(back, sc) {
					err = fmt.Errorf("%s is not %s", cast, sc)
				}
			}
			if err != nil {
				return fmt.Errorf("value %s (%s) does not convert to %s exactly, the type of %s", a.text, sc.DataType(), x.typ, x.text)
			}
			sc = cast
		}
		arr, err := scalar.MakeArrayFromScalar(sc, 1, mem)
		if err != nil {
			return err
		}
		values = append(values, arr)
	}
	if len(values) == 0 {
		out.valueSet = array.MakeArrayOfNull(mem, x.typ, 0)
	} else {
		set, err := array.Concatenate(values, mem)
		if err != nil {
			return err
		}
		out.valueSet = set
	}
	out.typ = arrow.FixedWidthTypes.Boolean
	return nil
}

func (e *Expr) isIn(ctx context.Context, x compute.Datum) (compute.Datum, error) {
	return compute.IsIn(ctx, compute.SetOptions{
		ValueSet:     compute.NewDatum(e.valueSet),
		NullBehavior: compute.NullMatchingInconclusive,
	}, x)
}

// compileBetween checks that x compares with both bounds.
func compileBetween(out *Expr) error {
	alignUnits(out.args)
	x, lo, hi := out.args[0], out.args[1], out.args[2]
	for _, pair := range [][2]*Expr{{x, lo}, {x, hi}} {
		probe := &Expr{fn: "greater_equal", args: pair[:]}
		if _, err := probe.resultType(); err != nil {
			return fmt.Errorf("cannot compare %s (%s) with %s (%s): %w", pair[0].text, pair[0].typ, pair[1].text, pair[1].typ, err)
		}
	}
	out.typ = arrow.FixedWidthTypes.Boolean
	return nil
}

func between(ctx context.Context, args []compute.Datum) (compute.Datum, error) {
	ge, err := compute.CallFunction(ctx, "greater_equal", nil, args[0], args[1])
	if err != nil {
		return nil, err
	}
	defer ge.Release()
	le, err := compute.CallFunction(ctx, "less_equal", nil, args[0], args[2])
	if err != nil {
		return nil, err
	}
	defer le.Release()
	return compute.CallFunction(ctx, "and_kleene", nil, ge, le)
}

// compileCaseWhen checks case_when(c1, v1, ..., cn, vn, otherwise): the
// conditions are bool, the values have one common type (see commonType),
// and values of another type are cast to it.
func compileCaseWhen(out *Expr) error {
	if len(out.args) < 3 || len(out.args)%2 == 0 {
		return fmt.Errorf("case_when takes pairs of condition and value and a final otherwise value, got %d argument(s)", len(out.args))
	}
	var types []arrow.DataType
	for i, a := range out.args {
		isCond := i%2 == 0 && i < len(out.args)-1
		if isCond {
			if a.typ.ID() != arrow.BOOL && a.typ.ID() != arrow.NULL {
				return fmt.Errorf("the condition %s is %s, not bool", a.text, a.typ)
			}
			continue
		}
		types = append(types, a.typ)
	}
	common, err := commonType(types)
	if err != nil {
		return err
	}
	for i, a := range out.args {
		isValue := i%2 == 1 || i == len(out.args)-1
		if isValue && a.typ.ID() != arrow.NULL && !arrow.TypeEqual(a.typ, common) {
			out.args[i] = &Expr{text: a.text, typ: common, column: -1, fn: "cast", castTo: common, args: []*Expr{a}}
		}
	}
	out.typ = common
	return nil
}

// commonType is the type of a when/then/otherwise result: nulls take the
// others' type, equal types stay, integers of several widths become int64
// and integers with floats float64. Anything else must be cast by the user.
func commonType(types []arrow.DataType) (arrow.DataType, error) {
	return commonTypeOf("then/otherwise values", types)
}

// commonTypeOf is commonType; what names the values in the error.
func commonTypeOf(what string, types []arrow.DataType) (arrow.DataType, error) {
	var typed []arrow.DataType
	for _, t := range types {
		if t.ID() != arrow.NULL {
			typed = append(typed, t)
		}
	}
	if len(typed) == 0 {
		return arrow.Null, nil
	}
	same, ints, numbers := true, true, true
	for _, t := range typed {
		same = same && arrow.TypeEqual(t, typed[0])
		ints = ints && arrow.IsInteger(t.ID())
		numbers = numbers && (arrow.IsInteger(t.ID()) || arrow.IsFloating(t.ID()))
	}
	switch {
	case same:
		return typed[0], nil
	case ints:
		return arrow.PrimitiveTypes.Int64, nil
	case numbers:
		return arrow.PrimitiveTypes.Float64, nil
	}
	names := make([]string, len(typed))
	for i, t := range typed {
		names[i] = t.String()
	}
	return nil, fmt.Errorf("the %s have types %s, which have no common type; cast them to one type", what, strings.Join(names, ", "))
}

// caseWhen picks, per row, the value of the first true condition (else the
// last argument): it numbers the rows' choices and takes them from the
// branches laid end to end, so any Arrow type works with one Take.
func caseWhen(ctx context.Context, typ arrow.DataType, args []compute.Datum, n int) (compute.Datum, error) {
	mem := compute.GetAllocator(ctx)
	k := len(args) / 2 // branches before otherwise
	choice := make([]int64, n)
	for i := range choice {
		choice[i] = int64(k)
	}
	var branches []arrow.Array
	defer func() {
		for _, b := range branches {
			b.Release()
		}
	}()
	for b := 0; b <= k; b++ {
		if b < k {
			cond, err := toArray(ctx, args[2*b], n)
			if err != nil {
				return nil, err
			}
			if c, ok := cond.(*array.Boolean); ok {
				for i := range n {
					if choice[i] == int64(k) && c.IsValid(i) && c.Value(i) {
						choice[i] = int64(b)
					}
				}
			}
			cond.Release()
		}
		value, err := toArray(ctx, args[min(2*b+1, len(args)-1)], n)
		if err != nil {
			return nil, err
		}
		if value.DataType().ID() == arrow.NULL && typ.ID() != arrow.NULL {
			value.Release()
			value = array.MakeArrayOfNull(mem, typ, n)
		}
		branches = append(branches, value)
	}
	all, err := array.Concatenate(branches, mem)
	if err != nil {
		return nil, err
	}
	defer all.Release()
	idx := array.NewInt64Builder(mem)
	defer idx.Release()
	idx.Reserve(n)
	for i, c := range choice {
		idx.UnsafeAppend(c*int64(n) + int64(i))
	}
	indices := idx.NewArray()
	defer indices.Release()
	res, err := compute.TakeArray(ctx, all, indices)
	if err != nil {
		return nil, err
	}
	defer res.Release()
	return compute.NewDatum(res), nil
}
