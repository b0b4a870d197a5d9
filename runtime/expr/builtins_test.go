package expr

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/runtime/plan"
)

var builtinSchema = arrow.NewSchema([]arrow.Field{
	{Name: "i", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "j", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "t", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "ls", Type: arrow.BinaryTypes.LargeString, Nullable: true},
}, nil)

// Five rows, the last all null.
func builtinBatch(mem memory.Allocator) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, builtinSchema)
	defer b.Release()
	valid := []bool{true, true, true, true, false}
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{7, -7, 250, -1, 0}, valid)
	b.Field(1).(*array.Int32Builder).AppendValues([]int32{2, 2, -100, 3, 0}, valid)
	b.Field(2).(*array.Float64Builder).AppendValues([]float64{2.5, -2.5, 7.0, -0.45, 0}, valid)
	b.Field(3).(*array.StringBuilder).AppendValues([]string{"  Héllo ", "abc", "", "ÄbÇ-x", ""}, valid)
	b.Field(4).(*array.StringBuilder).AppendValues([]string{"x", "", "z", "w", ""}, []bool{true, false, true, true, false})
	b.Field(5).(*array.LargeStringBuilder).AppendValues([]string{"L", "M", "N", "O", ""}, valid)
	return b.NewRecordBatch()
}

func evalBuiltin(t *testing.T, e plan.Expr) (string, string) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	batch := builtinBatch(mem)
	defer batch.Release()
	c, err := Compile(e, builtinSchema)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Eval(compute.WithAllocator(context.Background(), mem), batch)
	if err != nil {
		t.Fatal(err)
	}
	defer got.Release()
	if !arrow.TypeEqual(got.DataType(), c.Type()) {
		t.Errorf("%s: Eval gave %s, Type() says %s", c, got.DataType(), c.Type())
	}
	return c.Type().String(), got.String()
}

func TestBuiltins(t *testing.T) {
	for _, tc := range []struct {
		name string
		expr plan.Expr
		typ  string
		want string
	}{
		// Python's //: floors toward negative infinity.
		{"int // int", call("floor_divide", col("i"), col("j")), "int64", "[3 -4 -3 -1 (null)]"},
		{"int // literal", call("floor_divide", col("i"), intLit(100)), "int64", "[0 -1 2 -1 (null)]"},
		{"literal // column", call("floor_divide", intLit(-9), col("j")), "int64", "[-5 -5 0 -3 (null)]"},
		{"float // as Python", call("floor_divide", col("f"), floatLit(0.1)), "float64", "[24 -25 69 -5 (null)]"},
		{"float // 0 as numpy", call("floor_divide", col("f"), floatLit(0)), "float64", "[+Inf -Inf +Inf -Inf (null)]"},
		{"int // float", call("floor_divide", col("i"), floatLit(2)), "float64", "[3 -4 125 -1 (null)]"},
		{"abs int", call("abs", col("i")), "int64", "[7 7 250 1 (null)]"},
		{"abs float", call("abs", col("f")), "float64", "[2.5 2.5 7 0.45 (null)]"},
		{"round half away from zero", call("round", col("f")), "float64", "[3 -3 7 -0 (null)]"},
		{"round to 1 decimal", call("round", col("f"), intLit(1)), "float64", "[2.5 -2.5 7 -0.5 (null)]"},
		{"round to -1 decimal", call("round", col("f"), intLit(-1)), "float64", "[0 -0 10 -0 (null)]"},
		{"round int keeps it", call("round", col("j"), intLit(2)), "int32", "[2 2 -100 3 (null)]"},
		{"floor", call("floor", col("f")), "float64", "[2 -3 7 -1 (null)]"},
		{"ceil", call("ceil", col("f")), "float64", "[3 -2 7 -0 (null)]"},
		{"floor int", call("floor", col("i")), "int64", "[7 -7 250 -1 (null)]"},
		{"coalesce", call("coalesce", col("t"), col("s")), "utf8", `["x" "abc" "z" "w" (null)]`},
		{"fill_null with a literal", call("coalesce", col("t"), strLit("?")), "utf8", `["x" "?" "z" "w" "?"]`},
		{"coalesce int widths", call("coalesce", col("j"), col("i"), intLit(-1)), "int64", "[2 2 -100 3 -1]"},
		{"coalesce int and float", call("coalesce", col("i"), floatLit(0.5)), "float64", "[7 -7 250 -1 0.5]"},
		{"upper", call("upper", col("s")), "utf8", `["  HÉLLO " "ABC" "" "ÄBÇ-X" (null)]`},
		{"lower", call("lower", col("s")), "utf8", `["  héllo " "abc" "" "äbç-x" (null)]`},
		{"trim", call("trim", col("s")), "utf8", `["Héllo" "abc" "" "ÄbÇ-x" (null)]`},
		{"length counts characters", call("length", col("s")), "int64", "[8 3 0 5 (null)]"},
		{"contains", call("contains", col("s"), strLit("b")), "bool", "[false true false true (null)]"},
		{"starts_with", call("starts_with", col("s"), strLit("a")), "bool", "[false true false false (null)]"},
		{"ends_with", call("ends_with", col("s"), strLit("x")), "bool", "[false false false true (null)]"},
		{"replace", call("replace", col("s"), strLit("l"), strLit("L")), "utf8", `["  HéLLo " "abc" "" "ÄbÇ-x" (null)]`},
		{"substring", call("substring", col("s"), intLit(1), intLit(2)), "utf8", `[" H" "bc" "" "bÇ" (null)]`},
		{"substring to the end", call("substring", col("s"), intLit(3), nullLit("null")), "utf8", `["éllo " "" "" "-x" (null)]`},
		{"substring from the end", call("substring", col("s"), intLit(-2), nullLit("null")), "utf8", `["o " "bc" "" "-x" (null)]`},
		{"large strings stay large", call("lower", col("ls")), "large_utf8", `["l" "m" "n" "o" (null)]`},
		{"concat is null when one is", call("concat", col("s"), strLit("/"), col("t")), "utf8", `["  Héllo /x" (null) "/z" "ÄbÇ-x/w" (null)]`},
		{"concat with a large string", call("concat", col("t"), col("ls")), "large_utf8", `["xL" (null) "zN" "wO" (null)]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			typ, got := evalBuiltin(t, tc.expr)
			if typ != tc.typ || got != tc.want {
				t.Errorf("got %s %s, want %s %s", typ, got, tc.typ, tc.want)
			}
		})
	}
}

func TestBuiltinErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		expr plan.Expr
		want string
	}{
		{"// of a string", call("floor_divide", col("s"), intLit(2)), "expr: (s // 2): // needs numbers, got s (utf8)"},
		{"abs of a string", call("abs", col("s")), "abs needs a number, got s (utf8)"},
		{"round by a column", call("round", col("f"), col("i")), "round's decimals takes a constant integer, got i"},
		{"round int to tens", call("round", col("i"), intLit(-1)), "round of the integer i to -1 decimals is not supported"},
		{"upper of an int", call("upper", col("i")), "expr: i.str.upper(): str.upper needs a string, got i (int64)"},
		{"contains a column", call("contains", col("s"), col("t")), "str.contains takes a constant string, got t"},
		{"substring negative length", call("substring", col("s"), intLit(0), intLit(-1)), "length must be >= 0"},
		{"concat an int", call("concat", col("s"), col("i")), "concat needs strings, got i (int64)"},
		{"coalesce without a common type", call("coalesce", col("s"), col("i")), "the coalesce values have types utf8, int64, which have no common type"},
		{"coalesce of one", call("coalesce", col("s")), "coalesce takes at least two values"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Compile(tc.expr, builtinSchema)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestFloorDivideErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		expr plan.Expr
		want string
	}{
		{"by zero", call("floor_divide", col("i"), call("subtract", col("j"), intLit(2))), "expr: evaluating (i // (j - 2)): integer division by zero"},
		{"overflow", call("floor_divide", intLit(-9223372036854775808), call("negate", intLit(1))), "integer overflow in //"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			batch := builtinBatch(mem)
			defer batch.Release()
			c, err := Compile(tc.expr, builtinSchema)
			if err != nil {
				t.Fatal(err)
			}
			got, err := c.Eval(compute.WithAllocator(context.Background(), mem), batch)
			if err == nil {
				got.Release()
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}
