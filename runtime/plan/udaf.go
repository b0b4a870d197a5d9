package plan

import (
	"fmt"
	"strings"

	"github.com/flinkgo/flinkgo/udf/bridge/proto/workerpb"
)

// UDAFFunction is the Aggregate function name of a Python aggregate
// function (a pandas UDAF), whose spec is Aggregate.udf
// (docs/semantics.md#pandas-udafs).
const UDAFFunction = "udaf"

// validateUDAF checks an aggregate that calls a pandas UDAF; problems are
// returned without the node's label.
func validateUDAF(where string, a *Aggregate) []string {
	spec := a.UDF
	if a.Function != UDAFFunction {
		if spec != nil {
			return []string{fmt.Sprintf("%s: aggregate %s has a UDF spec; only function %q takes one", where, a.Function, UDAFFunction)}
		}
		return nil
	}
	if spec == nil {
		return []string{where + ": a udaf aggregate has no UDF spec"}
	}
	problems := validateSpec(where+": udaf", spec)
	if spec.GetFuncType() != workerpb.FuncType_FUNC_TYPE_PANDAS_AGGREGATE {
		problems = append(problems, fmt.Sprintf("%s: udaf %q has func_type %s, want FUNC_TYPE_PANDAS_AGGREGATE", where, spec.GetName(), spec.GetFuncType()))
	}
	if spec.GetIsAsync() {
		problems = append(problems, fmt.Sprintf("%s: udaf %q is async; aggregate functions are synchronous", where, spec.GetName()))
	}
	if len(a.Args) == 0 {
		problems = append(problems, fmt.Sprintf("%s: udaf %q has no argument columns", where, spec.GetName()))
	}
	for _, c := range a.Args {
		if p := checkColumn(fmt.Sprintf("udaf %q argument", spec.GetName()), c); p != "" {
			problems = append(problems, where+": "+p)
		}
	}
	return problems
}

// udafBatchSize is the rows per batch sent to the workers of a window's
// UDAFs: the smallest explicit batch_size among them, else the plan's.
// 0 when the window has no UDAF.
func udafBatchSize(aggs []*Aggregate, planBatch int) int {
	batch, any := 0, false
	for _, a := range aggs {
		if a.Function != UDAFFunction {
			continue
		}
		any = true
		if b := int(a.UDF.GetBatchSize()); b > 0 && (batch == 0 || b < batch) {
			batch = b
		}
	}
	if !any {
		return 0
	}
	if batch == 0 {
		batch = planBatch
	}
	return batch
}

// explainUDAFs lists an aggregation's pandas UDAFs, with the batch size
// and the workers per subtask they run with.
func explainUDAFs(sb *strings.Builder, op *Operator, aggs []*Aggregate) {
	var calls []string
	workers := 1
	for _, a := range aggs {
		if a.Function != UDAFFunction {
			continue
		}
		spec := a.UDF
		calls = append(calls, fmt.Sprintf("%s -> %s", explainSpec(spec.GetName()+"("+strings.Join(a.Args, ", ")+")", spec), a.Name))
		workers = max(workers, int(spec.GetConcurrency()))
	}
	if len(calls) > 0 {
		fmt.Fprintf(sb, "    pandas UDAFs (batch size %d, %d worker(s) per subtask, many groups per call): %s\n", op.BatchSize, workers, strings.Join(calls, "; "))
	}
}

// hasUDAF reports whether aggs has a pandas UDAF.
func hasUDAF(aggs []*Aggregate) bool {
	for _, a := range aggs {
		if a.Function == UDAFFunction {
			return true
		}
	}
	return false
}
