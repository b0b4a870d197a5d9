package expr

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/flinkgo/flinkgo/runtime/plan"
)

// ErrUnsupported means the expression uses something this evaluator does
// not implement (a UDF call, an unknown function); the message names it.
var ErrUnsupported = errors.New("expr: unsupported expression")

// kernels maps the plan's function names to arrow-go compute functions.
var kernels = map[string]struct {
	name  string
	arity int
}{
	"add": {"add", 2}, "subtract": {"subtract", 2}, "multiply": {"multiply", 2},
	"divide": {"divide", 2}, "negate": {"negate", 1},
	"equal": {"equal", 2}, "not_equal": {"not_equal", 2},
	"less": {"less", 2}, "less_equal": {"less_equal", 2},
	"greater": {"greater", 2}, "greater_equal": {"greater_equal", 2},
	"and": {"and_kleene", 2}, "or": {"or_kleene", 2}, "not": {"not", 1},
	"is_null": {"is_null", 1}, "is_not_null": {"is_not_null", 1},
	"cast": {"cast", 1}, "modulo": {"modulo", 2},
}

// specials are the functions compiled and evaluated here rather than by
// one kernel call (conditional.go, temporal.go); -1 arity is variadic.
var specials = map[string]struct {
	arity   int
	compile func(*Expr) error
}{
	"is_in": {-1, compileIsIn}, "between": {3, compileBetween}, "case_when": {-1, compileCaseWhen},
	"year": {1, compileDtField}, "month": {1, compileDtField}, "day": {1, compileDtField},
	"hour": {1, compileDtField}, "minute": {1, compileDtField}, "truncate": {2, compileTruncate},
	"floor_divide": {2, compileFloorDivide}, "coalesce": {-1, compileCoalesce},
	"abs": {1, compileUnaryNumeric}, "floor": {1, compileUnaryNumeric}, "ceil": {1, compileUnaryNumeric},
	"round": {-1, compileUnaryNumeric}, "concat": {-1, compileConcat},
	"upper": {-1, compileString}, "lower": {-1, compileString}, "trim": {-1, compileString},
	"length": {-1, compileString}, "contains": {-1, compileString}, "starts_with": {-1, compileString},
	"ends_with": {-1, compileString}, "replace": {-1, compileString}, "substring": {-1, compileString},
}

// stringFunctions render as the Python API's x.str.fn(...).
var stringFunctions = map[string]bool{
	"upper": true, "lower": true, "trim": true, "length": true, "contains": true,
	"starts_with": true, "ends_with": true, "replace": true, "substring": true,
}

var symbols = map[string]string{
	"add": "+", "subtract": "-", "multiply": "*", "divide": "/", "modulo": "%", "floor_divide": "//",
	"equal": "==", "not_equal": "!=", "less": "<", "less_equal": "<=",
	"greater": ">", "greater_equal": ">=", "and": "&", "or": "|",
}

// Expr is a compiled expression, bound to one input schema. It is
// immutable and safe for concurrent Eval.
type Expr struct {
	text   string
	typ    arrow.DataType
	column int           // for a column reference, else -1
	lit    scalar.Scalar // for a literal
	fn     string        // compute function for a call
	castTo arrow.DataType
	args   []*Expr

	valueSet arrow.Array                   // is_in's values, in the type of args[0]
	round    *compute.RoundTemporalOptions // dt.truncate's unit
	// evalFn computes a special function set up by its compile function
	// (builtins.go, strings.go) from its evaluated arguments and row count.
	evalFn func(ctx context.Context, args []compute.Datum, n int) (compute.Datum, error)
}

// Type is the type of the values Eval returns.
func (e *Expr) Type() arrow.DataType { return e.typ }

// String renders the expression as the user wrote it, for messages.
func (e *Expr) String() string { return e.text }

// Compile resolves e against schema and checks that every function applies
// to its argument types. Errors name the expression and, for an unknown
// column, the columns there are.
func Compile(e plan.Expr, schema *arrow.Schema) (*Expr, error) {
	c, err := compile(e, schema)
	if err != nil {
		return nil, err
	}
	return c, nil
}

func compile(e plan.Expr, schema *arrow.Schema) (*Expr, error) {
	switch e := e.(type) {
	case *plan.Column:
		idx := schema.FieldIndices(e.Name)
		if len(idx) == 0 {
			return nil, fmt.Errorf("expr: unknown column %q; columns are %v", e.Name, fieldNames(schema))
		}
		return &Expr{text: e.Name, typ: schema.Field(idx[0]).Type, column: idx[0]}, nil
	case *plan.Literal:
		sc, err := literal(e)
		if err != nil {
			return nil, err
		}
		return &Expr{text: sc.String(), typ: sc.DataType(), column: -1, lit: sc}, nil
	case *plan.Call:
		return compileCall(e, schema)
	case *plan.UDFCall:
		return nil, fmt.Errorf("%w: udf %q must be planned into a UDF operator, not evaluated here", ErrUnsupported, e.UDF.GetName())
	}
	return nil, fmt.Errorf("%w: empty expression", ErrUnsupported)
}

func compileArgs(call *plan.Call, schema *arrow.Schema) ([]*Expr, error) {
	args := make([]*Expr, 0, len(call.Args))
	for _, a := range call.Args {
		arg, err := compile(a, schema)
		if err != nil {
			return nil, err
		}
		args = append(args, arg)
	}
	return args, nil
}

func compileSpecial(call *plan.Call, schema *arrow.Schema) (*Expr, error) {
	fn := call.Function
	sp := specials[fn]
	if sp.arity >= 0 && len(call.Args) != sp.arity {
		return nil, fmt.Errorf("expr: %s takes %d argument(s), got %d", fn, sp.arity, len(call.Args))
	}
	if len(call.Args) == 0 {
		return nil, fmt.Errorf("expr: %s takes at least one argument", fn)
	}
	args, err := compileArgs(call, schema)
	if err != nil {
		return nil, err
	}
	out := &Expr{column: -1, fn: fn, args: args}
	out.text = render(fn, out)
	if err := sp.compile(out); err != nil {
		return nil, fmt.Errorf("expr: %s: %w", out.text, err)
	}
	return out, nil
}

func compileCall(call *plan.Call, schema *arrow.Schema) (*Expr, error) {
	if _, ok := specials[call.Function]; ok {
		return compileSpecial(call, schema)
	}
	k, ok := kernels[call.Function]
	if !ok {
		return nil, fmt.Errorf("%w: function %q", ErrUnsupported, call.Function)
	}
	if len(call.Args) != k.arity {
		return nil, fmt.Errorf("expr: %s takes %d argument(s), got %d", call.Function, k.arity, len(call.Args))
	}
	args, err := compileArgs(call, schema)
	if err != nil {
		return nil, err
	}
	out := &Expr{column: -1, fn: k.name, args: args}
	if k.arity == 2 {
		alignUnits(out.args)
	}
	if call.Function == "divide" {
		// True division: integers become float64 first.
		floats := true
		for i, a := range out.args {
			if arrow.IsInteger(a.typ.ID()) {
				out.args[i] = &Expr{text: a.text, typ: arrow.PrimitiveTypes.Float64, column: -1, fn: "cast", castTo: arrow.PrimitiveTypes.Float64, args: []*Expr{a}}
			}
			floats = floats && arrow.IsFloating(out.args[i].typ.ID())
		}
		if floats {
			// As pandas: x / 0 is inf, -inf or NaN, not an error.
			out.fn = "divide_unchecked"
		}
	}
	if call.Function == "cast" {
		t, err := ParseType(call.CastTo)
		if err != nil {
			return nil, err
		}
		out.castTo = t
	}
	out.text = render(call.Function, out)
	switch call.Function {
	case "add", "subtract", "multiply", "divide":
		if err := checkTemporalArithmetic(call.Function, out.args[0].typ, out.args[1].typ); err != nil {
			return nil, fmt.Errorf("expr: %s: %w", out.text, err)
		}
	}
	// The result type is what the kernel gives on zero rows of the
	// argument types: the same dispatch as on real data.
	typ, err := out.resultType()
	if err != nil {
		return nil, fmt.Errorf("expr: %s: %w", out.text, err)
	}
	out.typ = typ
	return out, nil
}

func render(fn string, e *Expr) string {
	if sym, ok := symbols[fn]; ok {
		return "(" + e.args[0].text + " " + sym + " " + e.args[1].text + ")"
	}
	switch fn {
	case "negate":
		return "-" + e.args[0].text
	case "not":
		return "~" + e.args[0].text
	case "cast":
		return fmt.Sprintf("%s.cast(%s)", e.args[0].text, e.castTo)
	case "is_in":
		return e.args[0].text + ".is_in([" + joinTexts(e.args[1:]) + "])"
	case "between":
		return e.args[0].text + ".between(" + joinTexts(e.args[1:]) + ")"
	case "case_when":
		var b strings.Builder
		for i := 0; i+1 < len(e.args); i += 2 {
			if i > 0 {
				b.WriteString(".")
			}
			fmt.Fprintf(&b, "when(%s).then(%s)", e.args[i].text, e.args[i+1].text)
		}
		fmt.Fprintf(&b, ".otherwise(%s)", e.args[len(e.args)-1].text)
		return b.String()
	case "truncate":
		return e.args[0].text + ".dt.truncate(" + e.args[1].text + ")"
	case "coalesce", "concat":
		return fn + "(" + joinTexts(e.args) + ")"
	}
	if _, ok := dtFields[fn]; ok {
		return e.args[0].text + ".dt." + fn + "()"
	}
	if stringFunctions[fn] {
		return e.args[0].text + ".str." + fn + "(" + joinTexts(e.args[1:]) + ")"
	}
	return e.args[0].text + "." + fn + "(" + joinTexts(e.args[1:]) + ")"
}

func joinTexts(es []*Expr) string {
	texts := make([]string, len(es))
	for i, a := range es {
		texts[i] = a.text
	}
	return strings.Join(texts, ", ")
}

func (e *Expr) resultType() (arrow.DataType, error) {
	if e.fn == "modulo" {
		for _, a := range e.args {
			if !arrow.IsInteger(a.typ.ID()) && !arrow.IsFloating(a.typ.ID()) {
				return nil, fmt.Errorf("modulo needs numbers, got %s", a.typ)
			}
		}
		return moduloType(e.args[0].typ, e.args[1].typ), nil
	}
	args := make([]compute.Datum, len(e.args))
	for i, a := range e.args {
		empty := array.MakeArrayOfNull(memory.DefaultAllocator, a.typ, 0)
		args[i] = compute.NewDatum(empty)
		empty.Release()
	}
	defer releaseAll(args)
	out, err := e.call(context.Background(), args)
	if err != nil {
		return nil, err
	}
	defer out.Release()
	return out.(compute.ArrayLikeDatum).Type(), nil
}

func (e *Expr) call(ctx context.Context, args []compute.Datum) (compute.Datum, error) {
	if e.fn == "cast" {
		if arrow.IsBaseBinary(e.castTo.ID()) {
			// arrow-go v18.9.0's casts to string leak their builders'
			// buffers from the allocator they are given (seen with the
			// checked allocator); Go's allocator lets the GC take them back.
			ctx = compute.WithAllocator(ctx, memory.NewGoAllocator())
		}
		// Checked like Arrow's safe casts, except that floats truncate
		// towards zero when cast to integers, as pandas, polars and SQL do.
		opts := compute.SafeCastOptions(e.castTo)
		opts.AllowFloatTruncate = true
		return compute.CastDatum(ctx, args[0], opts)
	}
	return compute.CallFunction(ctx, e.fn, nil, args...)
}

// Eval computes the expression over batch and returns one value per row.
// The caller releases the result. Memory comes from the allocator in ctx
// (compute.WithAllocator), else Go's.
func (e *Expr) Eval(ctx context.Context, batch arrow.RecordBatch) (arrow.Array, error) {
	d, err := e.eval(ctx, batch)
	if err != nil {
		return nil, fmt.Errorf("expr: evaluating %s: %w", e.text, err)
	}
	defer d.Release()
	switch v := d.(type) {
	case *compute.ArrayDatum:
		return v.MakeArray(), nil
	case *compute.ScalarDatum:
		return scalar.MakeArrayFromScalar(v.Value, int(batch.NumRows()), compute.GetAllocator(ctx))
	}
	return nil, fmt.Errorf("expr: evaluating %s gave a %s", e.text, d.Kind())
}

func (e *Expr) eval(ctx context.Context, batch arrow.RecordBatch) (compute.Datum, error) {
	switch {
	case e.column >= 0:
		return compute.NewDatum(batch.Column(e.column)), nil
	case e.lit != nil:
		return compute.NewDatum(e.lit), nil
	}
	args := make([]compute.Datum, 0, len(e.args))
	defer func() { releaseAll(args) }()
	for _, a := range e.args {
		d, err := a.eval(ctx, batch)
		if err != nil {
			return nil, err
		}
		args = append(args, d)
	}
	n := int(batch.NumRows())
	if e.evalFn != nil {
		return e.evalFn(ctx, args, n)
	}
	switch e.fn {
	case "modulo":
		return modulo(ctx, e.typ, args, n)
	case "is_in":
		return e.isIn(ctx, args[0])
	case "between":
		return between(ctx, args)
	case "case_when":
		return caseWhen(ctx, e.typ, args, n)
	case "truncate":
		return compute.CallFunction(ctx, "floor_temporal", e.round, args[0])
	}
	if field, ok := dtFields[e.fn]; ok {
		return dtField(ctx, field, args[0], n)
	}
	return e.call(ctx, args)
}

func releaseAll(ds []compute.Datum) {
	for _, d := range ds {
		if d != nil {
			d.Release()
		}
	}
}

func literal(l *plan.Literal) (scalar.Scalar, error) {
	var sc scalar.Scalar
	switch l.Kind {
	case plan.LiteralBool:
		sc = scalar.NewBooleanScalar(l.Bool)
	case plan.LiteralInt:
		sc = scalar.NewInt64Scalar(l.Int)
	case plan.LiteralFloat:
		sc = scalar.NewFloat64Scalar(l.Float)
	case plan.LiteralString:
		sc = scalar.NewStringScalar(l.String)
	case plan.LiteralNull:
		t, err := ParseType(cmpOr(l.Type, "null"))
		if err != nil {
			return nil, err
		}
		return scalar.MakeNullScalar(t), nil
	default:
		return nil, fmt.Errorf("%w: literal without a value", ErrUnsupported)
	}
	if l.Type == "" {
		return sc, nil
	}
	t, err := ParseType(l.Type)
	if err != nil {
		return nil, err
	}
	if d, ok := t.(*arrow.DurationType); ok {
		// A duration travels as an integer count of its unit (arrow-go
		// has no scalar cast from int64 to duration).
		if l.Kind != plan.LiteralInt {
			return nil, fmt.Errorf("expr: a %s literal must be an integer count of %s, got %s", d, d.Unit, sc)
		}
		return scalar.NewDurationScalar(arrow.Duration(l.Int), d), nil
	}
	cast, err := sc.CastTo(t)
	if err != nil {
		return nil, fmt.Errorf("expr: literal %s does not convert to %s: %w", sc, t, err)
	}
	return cast, nil
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func fieldNames(s *arrow.Schema) []string {
	names := make([]string, s.NumFields())
	for i, f := range s.Fields() {
		names[i] = f.Name
	}
	return names
}
