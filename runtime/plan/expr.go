package plan

import "github.com/flinkgo/flinkgo/udf/bridge/proto/workerpb"

// Expr is an expression of a select or a filter, evaluated column-wise on
// Arrow batches: *Column, *Literal, *Call (a built-in function, compiled by
// package expr) or *UDFCall (a Python UDF, which the planner takes out
// into UDF operators). A nil Expr is an empty one, which the validation
// refuses.
type Expr interface{ isExpr() }

// Column reads an input column.
type Column struct{ Name string }

// Literal is a constant.
type Literal struct {
	Kind LiteralKind
	// The value, by Kind.
	Bool   bool
	Int    int64
	Float  float64
	String string
	// Type is an Arrow type name (as pyarrow's str(type)), empty for the
	// value's natural type (bool, int64, float64, string); the type of a
	// null. A duration is an Int with Type "duration[s|ms|us|ns]".
	Type string
}

// LiteralKind is which value a literal holds.
type LiteralKind int

// The literal kinds; 0 is a literal without a value, which package expr
// refuses.
const (
	LiteralNull LiteralKind = iota + 1
	LiteralBool
	LiteralInt
	LiteralFloat
	LiteralString
)

// Call applies a built-in function (the functions and their arities are
// package expr's).
type Call struct {
	Function string
	Args     []Expr
	// CastTo is the Arrow type name of a cast.
	CastTo string
}

// UDFCall calls a Python scalar UDF on argument expressions.
type UDFCall struct {
	// UDF is nil when the client sent none (the validation refuses it).
	UDF  *workerpb.UdfSpec
	Args []Expr
}

// NamedExpr is an output column of a select.
type NamedExpr struct {
	Name string
	Expr Expr
}

func (*Column) isExpr()  {}
func (*Literal) isExpr() {}
func (*Call) isExpr()    {}
func (*UDFCall) isExpr() {}

// ColumnName returns the column e reads when e is a column reference, ""
// otherwise.
func ColumnName(e Expr) string {
	if c, ok := e.(*Column); ok {
		return c.Name
	}
	return ""
}
