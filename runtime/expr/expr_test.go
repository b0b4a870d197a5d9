package expr

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"go.uber.org/goleak"

	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/udf/bridge/proto/workerpb"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Expression builders, as the Python client writes them.
func col(name string) plan.Expr {
	return &plan.Column{Name: name}
}
func intLit(v int64) plan.Expr {
	return &plan.Literal{Kind: plan.LiteralInt, Int: v}
}
func floatLit(v float64) plan.Expr {
	return &plan.Literal{Kind: plan.LiteralFloat, Float: v}
}
func strLit(v string) plan.Expr {
	return &plan.Literal{Kind: plan.LiteralString, String: v}
}
func call(fn string, args ...plan.Expr) plan.Expr {
	return &plan.Call{Function: fn, Args: args}
}
func cast(e plan.Expr, to string) plan.Expr {
	return &plan.Call{Function: "cast", Args: []plan.Expr{e}, CastTo: to}
}

var testSchema = arrow.NewSchema([]arrow.Field{
	{Name: "x", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "y", Type: arrow.PrimitiveTypes.Float64},
	{Name: "s", Type: arrow.BinaryTypes.String},
	{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
}, nil)

func testBatch(mem memory.Allocator) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, testSchema)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2, 3, 0}, []bool{true, true, true, false})
	b.Field(1).(*array.Float64Builder).AppendValues([]float64{0.5, 1.5, 2.5, 3.5}, nil)
	b.Field(2).(*array.StringBuilder).AppendValues([]string{"a", "bb", "ccc", "dddd"}, nil)
	b.Field(3).(*array.BooleanBuilder).AppendValues([]bool{true, false, true, false}, []bool{true, true, false, true})
	return b.NewRecordBatch()
}

func TestEval(t *testing.T) {
	for _, tc := range []struct {
		name string
		expr plan.Expr
		typ  string
		want string
	}{
		{"column", col("x"), "int64", "[1 2 3 (null)]"},
		{"add literal", call("add", col("x"), intLit(10)), "int64", "[11 12 13 (null)]"},
		{"int times float", call("multiply", col("x"), col("y")), "float64", "[0.5 3 7.5 (null)]"},
		{"true division", call("divide", col("x"), intLit(2)), "float64", "[0.5 1 1.5 (null)]"},
		{"integer division by zero as pandas", call("divide", call("subtract", col("x"), intLit(2)), intLit(0)), "float64", "[-Inf NaN +Inf (null)]"},
		{"float division by zero as pandas", call("divide", col("y"), floatLit(0)), "float64", "[+Inf +Inf +Inf +Inf]"},
		{"negate", call("negate", col("y")), "float64", "[-0.5 -1.5 -2.5 -3.5]"},
		{"compare with float literal", call("greater", col("x"), floatLit(1.5)), "bool", "[false true true (null)]"},
		{"kleene and", call("and", call("greater", col("y"), floatLit(1)), col("b")), "bool", "[false false (null) false]"},
		{"kleene or", call("or", col("b"), call("is_null", col("x"))), "bool", "[true false (null) true]"},
		{"not", call("not", col("b")), "bool", "[false true (null) true]"},
		{"is_not_null", call("is_not_null", col("x")), "bool", "[true true true false]"},
		{"cast to string", cast(col("x"), "string"), "utf8", `["1" "2" "3" (null)]`},
		{"string equality", call("equal", col("s"), strLit("bb")), "bool", "[false true false false]"},
		{"python modulo", call("modulo", call("negate", col("x")), intLit(2)), "int64", "[1 0 1 (null)]"},
		{"float modulo has the divisor's sign", call("modulo", col("y"), floatLit(-1)), "float64", "[-0.5 -0.5 -0.5 -0.5]"},
		{"literal only broadcasts", call("add", intLit(1), intLit(2)), "int64", "[3 3 3 3]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			batch := testBatch(mem)
			defer batch.Release()
			e, err := Compile(tc.expr, testSchema)
			if err != nil {
				t.Fatal(err)
			}
			if e.Type().String() != tc.typ {
				t.Errorf("type %s, want %s", e.Type(), tc.typ)
			}
			got, err := e.Eval(compute.WithAllocator(context.Background(), mem), batch)
			if err != nil {
				t.Fatal(err)
			}
			defer got.Release()
			if got.String() != tc.want {
				t.Errorf("%s = %s, want %s", e, got, tc.want)
			}
		})
	}
}

func TestCompileErrors(t *testing.T) {
	udf := &plan.UDFCall{UDF: &workerpb.UdfSpec{Name: "score"}}
	for _, tc := range []struct {
		name string
		expr plan.Expr
		want string
	}{
		{"unknown column", call("add", col("temprature"), intLit(1)), `unknown column "temprature"; columns are [x y s b]`},
		{"bad types", call("add", col("s"), intLit(1)), "expr: (s + 1):"},
		{"unknown function", call("power", col("x"), intLit(2)), `function "power"`},
		{"modulo of strings", call("modulo", col("s"), intLit(2)), "modulo needs numbers"},
		{"arity", call("negate", col("x"), col("y")), "negate takes 1 argument(s), got 2"},
		{"unknown cast type", cast(col("x"), "decimal[9]"), `unknown Arrow type "decimal[9]"`},
		{"udf", udf, `udf "score" must be planned into a UDF operator`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Compile(tc.expr, testSchema)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
	_, err := Compile(udf, testSchema)
	if !errors.Is(err, ErrUnsupported) {
		t.Errorf("udf error %v does not wrap ErrUnsupported", err)
	}
}

func TestOverflowIsAnError(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	batch := testBatch(mem)
	defer batch.Release()
	e, err := Compile(call("add", col("x"), intLit(1<<63-1)), testSchema)
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Eval(compute.WithAllocator(context.Background(), mem), batch)
	if err == nil || !strings.Contains(err.Error(), "overflow") || !strings.Contains(err.Error(), "(x + 9223372036854775807)") {
		t.Fatalf("want an overflow error naming the expression, got %v", err)
	}
}

func TestProjectionAndFilter(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ctx := compute.WithAllocator(context.Background(), mem)
	batch := testBatch(mem)
	defer batch.Release()

	pred, err := Compile(call("greater", col("x"), intLit(1)), testSchema)
	if err != nil {
		t.Fatal(err)
	}
	f, err := NewFilter(pred)
	if err != nil {
		t.Fatal(err)
	}
	kept, err := f.Apply(ctx, batch)
	if err != nil {
		t.Fatal(err)
	}
	defer kept.Release()
	// x = 1 is false and x = null is null: both dropped.
	if got := kept.Column(2).String(); got != `["bb" "ccc"]` {
		t.Errorf("kept s = %s", got)
	}

	doubled, err := Compile(call("multiply", col("y"), intLit(2)), testSchema)
	if err != nil {
		t.Fatal(err)
	}
	name, err := Compile(col("s"), testSchema)
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewProjection([]string{"s", "y2"}, []*Expr{name, doubled})
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Apply(ctx, kept)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Release()
	if got := out.Schema().String(); !strings.Contains(got, "s: type=utf8") || !strings.Contains(got, "y2: type=float64") {
		t.Errorf("schema %s", got)
	}
	if got := out.Column(1).String(); got != "[3 5]" {
		t.Errorf("y2 = %s", got)
	}

	notBool, _ := Compile(col("x"), testSchema)
	if _, err := NewFilter(notBool); err == nil || !strings.Contains(err.Error(), "not bool") {
		t.Errorf("non-boolean filter: %v", err)
	}
}

func TestParseType(t *testing.T) {
	for name, want := range map[string]string{
		"int64": "int64", "double": "float64", "float": "float32", "string": "utf8",
		"timestamp[us]": "timestamp[us]", "timestamp[ms, tz=UTC]": "timestamp[ms, tz=UTC]", "date32[day]": "date32",
	} {
		got, err := ParseType(name)
		if err != nil || got.String() != want {
			t.Errorf("ParseType(%q) = %v, %v; want %s", name, got, err, want)
		}
	}
}

func TestFloatToIntCastTruncates(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	batch := testBatch(mem)
	defer batch.Release()
	e, err := Compile(cast(call("multiply", col("y"), floatLit(-1)), "int64"), testSchema)
	if err != nil {
		t.Fatal(err)
	}
	got, err := e.Eval(compute.WithAllocator(context.Background(), mem), batch)
	if err != nil {
		t.Fatal(err)
	}
	defer got.Release()
	if got.String() != "[0 -1 -2 -3]" {
		t.Errorf("cast = %s", got)
	}
}
