// Package expr evaluates the plan's built-in expressions (columns, literals,
// arithmetic, comparisons, boolean logic, null tests, casts) on Arrow record
// batches, column-wise with arrow-go's compute kernels, never row by row.
//
// Compile resolves columns and checks types against the input schema once;
// Eval then runs on every batch. Semantics are Arrow's compute kernels':
// integer arithmetic is checked for overflow, comparisons and and/or follow
// SQL's three-valued logic (Kleene), and a filter drops rows whose predicate
// is false or null. Division is true division, as pandas, polars and Spark's
// `/`: integer operands are cast to float64 first, and a zero divisor gives
// inf, -inf or NaN as in pandas (integer modulo by zero stays an error: its
// result is int64, which has no NaN). Casts are checked
// (overflow and invalid strings fail) except that a float cast to an
// integer truncates towards zero.
//
// is_in, between and case_when follow SQL's null rules (conditional.go);
// timestamps take durations, subtract to durations and have .dt fields and
// truncate, in their zone's wall-clock time or UTC when naive (temporal.go).
// floor_divide (Python's //), abs, round, floor, ceil and coalesce are in
// builtins.go, the string functions and concat in strings.go.
// Where arrow-go has no kernel (modulo, floor_divide, case_when, the .dt
// fields, the string functions) the function is a loop over the operands'
// Arrow buffers, never over rows boxed one by one. (arrow-go's one string
// kernel, starts_with, is not used: one loop serves all the predicates.)
//
// UDF calls are not expressions here: the planner moves them into UDF
// operators (package runtime/operators). This package must not import the bridge
// or start processes.
package expr
