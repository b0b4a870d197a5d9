package expr

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/scalar"
)

// String built-ins (the Python API's .str functions and concat). arrow-go
// has kernels for none of them but starts_with, so each is one loop over
// the column's values. Strings are utf8 or large_utf8; the result keeps
// the input's type (bool for the tests, int64 for length). Characters are
// Unicode code points: length counts them, substring slices them. A null
// string gives null; the pattern arguments are constants.

type stringValues interface {
	arrow.Array
	Value(i int) string
}

type stringBuilder interface {
	array.Builder
	Append(string)
}

func isString(t arrow.DataType) bool {
	return t.ID() == arrow.STRING || t.ID() == arrow.LARGE_STRING
}

// constString reads a constant string argument.
func constString(fn string, a *Expr) (string, error) {
	if a.lit == nil || !isString(a.typ) || !a.lit.IsValid() {
		return "", fmt.Errorf("str.%s takes a constant string, got %s (%s)", fn, a.text, a.typ)
	}
	return string(a.lit.(*scalar.String).Value.Bytes()), nil
}

// constInt reads a constant integer argument.
func constInt(what string, a *Expr) (int64, error) {
	if a.lit == nil || !arrow.IsInteger(a.typ.ID()) || !a.lit.IsValid() {
		return 0, fmt.Errorf("%s takes a constant integer, got %s (%s)", what, a.text, a.typ)
	}
	v, ok := a.lit.(*scalar.Int64)
	if !ok {
		return 0, fmt.Errorf("%s takes an int64 constant, got %s (%s)", what, a.text, a.typ)
	}
	return v.Value, nil
}

// compileString checks a .str function and sets how it maps one value.
func compileString(out *Expr) error {
	x := out.args[0]
	if !isString(x.typ) {
		return fmt.Errorf("str.%s needs a string, got %s (%s); cast it first, e.g. .cast('string')", out.fn, x.text, x.typ)
	}
	want := map[string]int{"upper": 1, "lower": 1, "trim": 1, "length": 1, "contains": 2, "starts_with": 2, "ends_with": 2, "replace": 3, "substring": 3}[out.fn]
	if len(out.args) != want {
		return fmt.Errorf("str.%s takes %d argument(s), got %d", out.fn, want-1, len(out.args)-1)
	}
	var toString func(string) string
	var toBool func(string) bool
	switch out.fn {
	case "upper":
		toString = strings.ToUpper
	case "lower":
		toString = strings.ToLower
	case "trim":
		toString = strings.TrimSpace
	case "length":
		out.typ = arrow.PrimitiveTypes.Int64
		out.evalFn = mapStrings(func(s string) int64 { return int64(utf8.RuneCountInString(s)) })
		return nil
	case "contains", "starts_with", "ends_with":
		pattern, err := constString(out.fn, out.args[1])
		if err != nil {
			return err
		}
		test := map[string]func(string, string) bool{"contains": strings.Contains, "starts_with": strings.HasPrefix, "ends_with": strings.HasSuffix}[out.fn]
		toBool = func(s string) bool { return test(s, pattern) }
	case "replace":
		old, err := constString(out.fn, out.args[1])
		if err != nil {
			return err
		}
		repl, err := constString(out.fn, out.args[2])
		if err != nil {
			return err
		}
		if old == "" {
			return fmt.Errorf("str.replace: the text to replace is empty")
		}
		toString = func(s string) string { return strings.ReplaceAll(s, old, repl) }
	case "substring":
		start, err := constInt("str.substring's start", out.args[1])
		if err != nil {
			return err
		}
		length := int64(-1) // to the end
		if l := out.args[2]; !(l.lit != nil && !l.lit.IsValid()) {
			if length, err = constInt("str.substring's length", l); err != nil {
				return err
			}
			if length < 0 {
				return fmt.Errorf("str.substring's length must be >= 0, got %d", length)
			}
		}
		toString = func(s string) string { return substring(s, start, length) }
	}
	if toBool != nil {
		out.typ = arrow.FixedWidthTypes.Boolean
		out.evalFn = mapStrings(func(s string) bool { return toBool(s) })
		return nil
	}
	out.typ = x.typ
	out.evalFn = func(ctx context.Context, args []compute.Datum, n int) (compute.Datum, error) {
		in, err := toArray(ctx, args[0], n)
		if err != nil {
			return nil, err
		}
		defer in.Release()
		strs := in.(stringValues)
		b := array.NewBuilder(compute.GetAllocator(ctx), out.typ).(stringBuilder)
		defer b.Release()
		b.Reserve(n)
		for i := range n {
			if strs.IsNull(i) {
				b.AppendNull()
				continue
			}
			b.Append(toString(strs.Value(i)))
		}
		res := b.NewArray()
		defer res.Release()
		return compute.NewDatum(res), nil
	}
	return nil
}

// substring slices s by code points as Python's s[start:start+length]
// (length -1: to the end); a negative start counts from the end.
func substring(s string, start, length int64) string {
	if start < 0 {
		start += int64(utf8.RuneCountInString(s))
		start = max(start, 0)
	}
	var from, to = -1, len(s)
	var k int64
	for i := range s {
		if k == start {
			from = i
		}
		if length >= 0 && k == start+length {
			to = i
			break
		}
		k++
	}
	if from < 0 {
		return ""
	}
	return s[from:to]
}

// mapStrings evaluates a function of one string into int64 or bool values.
func mapStrings[T int64 | bool](f func(string) T) func(context.Context, []compute.Datum, int) (compute.Datum, error) {
	return func(ctx context.Context, args []compute.Datum, n int) (compute.Datum, error) {
		in, err := toArray(ctx, args[0], n)
		if err != nil {
			return nil, err
		}
		defer in.Release()
		strs := in.(stringValues)
		mem := compute.GetAllocator(ctx)
		var res arrow.Array
		switch any(f).(type) {
		case func(string) int64:
			g := any(f).(func(string) int64)
			b := array.NewInt64Builder(mem)
			defer b.Release()
			b.Reserve(n)
			for i := range n {
				if strs.IsNull(i) {
					b.AppendNull()
				} else {
					b.UnsafeAppend(g(strs.Value(i)))
				}
			}
			res = b.NewArray()
		default:
			g := any(f).(func(string) bool)
			b := array.NewBooleanBuilder(mem)
			defer b.Release()
			b.Reserve(n)
			for i := range n {
				if strs.IsNull(i) {
					b.AppendNull()
				} else {
					b.UnsafeAppend(g(strs.Value(i)))
				}
			}
			res = b.NewArray()
		}
		defer res.Release()
		return compute.NewDatum(res), nil
	}
}

// compileConcat checks concat(a, b, ...): strings joined per row, null
// when any is null (as Spark's and Flink SQL's CONCAT); large_utf8 if any
// argument is.
func compileConcat(out *Expr) error {
	if len(out.args) < 2 {
		return fmt.Errorf("concat takes at least two strings, got %d", len(out.args))
	}
	out.typ = arrow.BinaryTypes.String
	for _, a := range out.args {
		if !isString(a.typ) && a.typ.ID() != arrow.NULL {
			return fmt.Errorf("concat needs strings, got %s (%s); cast it with .cast('string')", a.text, a.typ)
		}
		if a.typ.ID() == arrow.LARGE_STRING {
			out.typ = arrow.BinaryTypes.LargeString
		}
	}
	out.evalFn = func(ctx context.Context, args []compute.Datum, n int) (compute.Datum, error) {
		cols := make([]arrow.Array, 0, len(args))
		defer func() {
			for _, c := range cols {
				c.Release()
			}
		}()
		for _, d := range args {
			a, err := toArray(ctx, d, n)
			if err != nil {
				return nil, err
			}
			cols = append(cols, a)
		}
		b := array.NewBuilder(compute.GetAllocator(ctx), out.typ).(stringBuilder)
		defer b.Release()
		b.Reserve(n)
		var sb strings.Builder
	rows:
		for i := range n {
			sb.Reset()
			for _, c := range cols {
				if c.IsNull(i) {
					b.AppendNull()
					continue rows
				}
				sb.WriteString(c.(stringValues).Value(i))
			}
			b.Append(sb.String())
		}
		res := b.NewArray()
		defer res.Release()
		return compute.NewDatum(res), nil
	}
	return nil
}
