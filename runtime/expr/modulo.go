package expr

import (
	"context"
	"errors"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/scalar"
)

// arrow-go has no modulo kernel, so modulo is computed here, column-wise
// over the operands' buffers, with Python's (and pandas') semantics: the
// result has the divisor's sign. Integer operands give int64 and a zero
// divisor is an error; otherwise float64, where x % 0 is NaN.

var errModuloByZero = errors.New("integer modulo by zero")

func moduloType(a, b arrow.DataType) arrow.DataType {
	if arrow.IsInteger(a.ID()) && arrow.IsInteger(b.ID()) {
		return arrow.PrimitiveTypes.Int64
	}
	return arrow.PrimitiveTypes.Float64
}

// numericOperands turns modulo's and floor_divide's two operands into
// arrays of typ (int64 or float64), n rows each; the caller releases them.
func numericOperands(ctx context.Context, typ arrow.DataType, args []compute.Datum, n int) ([]arrow.Array, error) {
	mem := compute.GetAllocator(ctx)
	cols := make([]arrow.Array, 0, 2)
	release := func() {
		for _, c := range cols {
			c.Release()
		}
	}
	for _, d := range args {
		var arr arrow.Array
		switch v := d.(type) {
		case *compute.ArrayDatum:
			arr = v.MakeArray()
		case *compute.ScalarDatum:
			var err error
			if arr, err = scalar.MakeArrayFromScalar(v.Value, n, mem); err != nil {
				release()
				return nil, err
			}
		default:
			release()
			return nil, errors.New("unsupported operand")
		}
		cast, err := compute.CastArray(ctx, arr, compute.SafeCastOptions(typ))
		arr.Release()
		if err != nil {
			release()
			return nil, err
		}
		cols = append(cols, cast)
	}
	return cols, nil
}

// modulo computes args[0] % args[1] for n rows.
func modulo(ctx context.Context, typ arrow.DataType, args []compute.Datum, n int) (compute.Datum, error) {
	return numericBinary(ctx, typ, args, n, func(x, y int64) (int64, error) {
		if y == 0 {
			return 0, errModuloByZero
		}
		r := x % y
		if r != 0 && (r < 0) != (y < 0) {
			r += y
		}
		return r, nil
	}, func(x, y float64) float64 {
		r := math.Mod(x, y)
		if r != 0 && (r < 0) != (y < 0) {
			r += y
		}
		return r
	})
}

// numericBinary applies an operator of two numeric operands row by row:
// intOp when typ is int64, floatOp otherwise (float64); a NULL operand
// gives NULL. The first error of intOp fails the whole batch.
func numericBinary(ctx context.Context, typ arrow.DataType, args []compute.Datum, n int,
	intOp func(x, y int64) (int64, error), floatOp func(x, y float64) float64) (compute.Datum, error) {
	mem := compute.GetAllocator(ctx)
	cols, err := numericOperands(ctx, typ, args, n)
	if err != nil {
		return nil, err
	}
	defer cols[0].Release()
	defer cols[1].Release()
	var res arrow.Array
	if typ.ID() == arrow.INT64 {
		a, b := cols[0].(*array.Int64), cols[1].(*array.Int64)
		out := array.NewInt64Builder(mem)
		defer out.Release()
		out.Reserve(n)
		for i := range n {
			if a.IsNull(i) || b.IsNull(i) {
				out.AppendNull()
				continue
			}
			v, err := intOp(a.Value(i), b.Value(i))
			if err != nil {
				return nil, err
			}
			out.UnsafeAppend(v)
		}
		res = out.NewArray()
	} else {
		a, b := cols[0].(*array.Float64), cols[1].(*array.Float64)
		out := array.NewFloat64Builder(mem)
		defer out.Release()
		out.Reserve(n)
		for i := range n {
			if a.IsNull(i) || b.IsNull(i) {
				out.AppendNull()
				continue
			}
			out.UnsafeAppend(floatOp(a.Value(i), b.Value(i)))
		}
		res = out.NewArray()
	}
	defer res.Release()
	return compute.NewDatum(res), nil
}
