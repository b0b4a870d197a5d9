package plan

import (
	"fmt"
	"slices"
	"strings"

	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
	"github.com/flinkgo/flinkgo/udf/bridge/proto/workerpb"
)

// reservedPrefix starts the names of the temporary columns the planner
// creates; user columns must not use it.
const reservedPrefix = "__flinkgo_"

// nodeKind is the operator kind of a logical node, 0 when it has none.
func nodeKind(n *planpb.Node) Kind {
	switch n.GetKind().(type) {
	case *planpb.Node_Source:
		return KindSource
	case *planpb.Node_Select:
		return KindSelect
	case *planpb.Node_Filter:
		return KindFilter
	case *planpb.Node_MapBatches:
		return KindMapBatches
	case *planpb.Node_KeyedAggregate:
		return KindKeyedAggregate
	case *planpb.Node_Union:
		return KindUnion
	case *planpb.Node_Sink:
		return KindSink
	case *planpb.Node_DropDuplicates:
		return KindDropDuplicates
	case *planpb.Node_Limit:
		return KindLimit
	case *planpb.Node_WatermarkAssigner:
		return KindWatermarkAssigner
	case *planpb.Node_IntervalJoin:
		return KindIntervalJoin
	case *planpb.Node_Join:
		return KindJoin
	case *planpb.Node_WindowAggregate:
		return KindWindowAggregate
	}
	return 0
}

// validate reports every structural problem of the plan's nodes. The plan
// lists nodes in topological order: every input names a node listed earlier.
func validate(job *planpb.JobPlan) []string {
	var problems []string
	if len(job.GetNodes()) == 0 {
		return []string{"the plan has no nodes"}
	}
	index := make(map[int32]int, len(job.GetNodes())) // id -> first position
	for i, n := range job.GetNodes() {
		if n == nil {
			continue
		}
		if _, dup := index[n.GetId()]; !dup {
			index[n.GetId()] = i
		}
	}
	for i, n := range job.GetNodes() {
		if n == nil {
			problems = append(problems, fmt.Sprintf("node #%d of the plan is empty", i))
			continue
		}
		label := nodeLabel(n)
		bad := func(format string, args ...any) {
			problems = append(problems, label+": "+fmt.Sprintf(format, args...))
		}
		if first := index[n.GetId()]; first != i {
			bad("id %d is also the id of node #%d of the plan %q", n.GetId(), first, job.GetNodes()[first].GetName())
		}
		if n.GetParallelism() < 0 {
			bad("parallelism is %d, must not be negative (0 means the default)", n.GetParallelism())
		} else if n.GetParallelism() > ParallelismLimit {
			bad("parallelism is %d, above the runtime's limit of %d (plan.ParallelismLimit)", n.GetParallelism(), ParallelismLimit)
		}
		if strings.HasPrefix(n.GetUid(), reservedPrefix) {
			bad("uid %q starts with %q, which is reserved", n.GetUid(), reservedPrefix)
		}
		kind := nodeKind(n)
		if kind == 0 {
			bad("has no kind (source, select, filter, map_batches, keyed_aggregate, drop_duplicates, limit, watermark_assigner, interval_join, join, window_aggregate, union or sink)")
		}
		problems = append(problems, validateInputs(job, n, kind, i, index, label)...)
		for _, p := range validateKind(n, kind) {
			problems = append(problems, label+": "+p)
		}
	}
	return problems
}

func validateInputs(job *planpb.JobPlan, n *planpb.Node, kind Kind, pos int, index map[int32]int, label string) []string {
	var problems []string
	bad := func(format string, args ...any) {
		problems = append(problems, label+": "+fmt.Sprintf(format, args...))
	}
	inputs := n.GetInputs()
	switch {
	case kind == KindSource && len(inputs) > 0:
		bad("a source has no inputs, it has %d", len(inputs))
	case kind == KindUnion && len(inputs) == 0:
		bad("a union needs at least one input")
	case kind == KindIntervalJoin && len(inputs) != 2:
		bad("an interval_join needs two inputs (left, right), it has %d", len(inputs))
	case kind == KindJoin && len(inputs) != 2:
		bad("a join needs two inputs (left, right), it has %d", len(inputs))
	case kind != 0 && kind != KindSource && kind != KindUnion && kind != KindIntervalJoin && kind != KindJoin && len(inputs) != 1:
		bad("a %s needs exactly one input, it has %d", kind, len(inputs))
	}
	for j, in := range inputs {
		if in == nil {
			bad("input #%d is empty", j)
			continue
		}
		id := in.GetNode()
		switch at, ok := index[id]; {
		case !ok:
			bad("input node %d is unknown", id)
		case id == n.GetId():
			bad("reads its own output (a cycle)")
		case at > pos:
			bad("input node %d %q is listed after it: the plan must list nodes in topological order (out-of-order inputs or a cycle)", id, job.GetNodes()[at].GetName())
		default:
			up := job.GetNodes()[at]
			if nodeKind(up) == KindSink {
				bad("reads the output of sink %s: a sink has no outputs", nodeLabel(up))
			}
			if p := checkOutput(in, up); p != "" {
				bad("%s", p)
			}
		}
		part := in.GetPartitioning()
		pk := part.GetKind()
		if _, known := planpb.Partitioning_Kind_name[int32(pk)]; !known {
			bad("input from node %d has unknown partitioning %d", id, int32(pk))
			continue
		}
		switch {
		case pk == planpb.Partitioning_HASH && len(part.GetKeys()) == 0:
			bad("input from node %d: HASH partitioning needs key columns", id)
		case pk != planpb.Partitioning_HASH && len(part.GetKeys()) > 0:
			bad("input from node %d: key columns %v are only allowed with HASH partitioning, not %s", id, part.GetKeys(), pk)
		}
		for _, k := range part.GetKeys() {
			if p := checkColumn(fmt.Sprintf("input from node %d: key column", id), k); p != "" {
				bad("%s", p)
			}
		}
	}
	return problems
}

// checkOutput reports an input that reads an output its node does not
// have, "" when it is fine: late rows exist with late_rows=KEEP only, of a
// window or of an interval join's left side (LATE_ROWS), or of an interval
// join's right side (LATE_ROWS_RIGHT).
func checkOutput(in *planpb.Input, up *planpb.Node) string {
	var keep planpb.WindowAggregate_LateRows
	switch out := in.GetOutput(); {
	case out == planpb.Input_MAIN:
		return ""
	case out == planpb.Input_LATE_ROWS && up.GetWindowAggregate() != nil:
		keep = up.GetWindowAggregate().GetLateRows()
	case (out == planpb.Input_LATE_ROWS || out == planpb.Input_LATE_ROWS_RIGHT) && up.GetIntervalJoin() != nil:
		keep = up.GetIntervalJoin().GetLateRows()
	case out == planpb.Input_LATE_ROWS:
		return fmt.Sprintf("reads the late rows of %s, which is neither a window aggregation nor an interval join: only they have late rows", nodeLabel(up))
	case out == planpb.Input_LATE_ROWS_RIGHT:
		return fmt.Sprintf("reads the right input's late rows of %s, which is not an interval join: only an interval join has two", nodeLabel(up))
	default:
		return fmt.Sprintf("input from node %d reads its output %d, which is unknown (MAIN, LATE_ROWS or LATE_ROWS_RIGHT)", up.GetId(), int32(out))
	}
	if keep != planpb.WindowAggregate_KEEP {
		return fmt.Sprintf("reads the late rows of %s, which drops them: give it late_rows=\"keep\"", nodeLabel(up))
	}
	return ""
}

// checkColumn reports an empty or reserved column name, "" when it is fine.
func checkColumn(what, name string) string {
	switch {
	case name == "":
		return what + " is empty"
	case strings.HasPrefix(name, reservedPrefix):
		return fmt.Sprintf("%s %q starts with %q, which is reserved for the planner's columns", what, name, reservedPrefix)
	}
	return ""
}

// validateKind checks the node's own content; problems are returned without
// the node's label.
func validateKind(n *planpb.Node, kind Kind) []string {
	var problems []string
	bad := func(format string, args ...any) {
		problems = append(problems, fmt.Sprintf(format, args...))
	}
	column := func(what, name string) {
		if p := checkColumn(what, name); p != "" {
			problems = append(problems, p)
		}
	}
	switch kind {
	case KindSource:
		if n.GetSource().GetKind() == nil {
			bad("the source has no kind (arrow, file, datagen, kafka or nexmark)")
		}
	case KindSink:
		if n.GetSink().GetKind() == nil {
			bad("the sink has no kind (print, file or collect)")
		}
	case KindSelect:
		cols := n.GetSelect().GetColumns()
		if len(cols) == 0 {
			bad("the select has no columns")
		}
		seen := map[string]bool{}
		for j, c := range cols {
			what := fmt.Sprintf("select column #%d", j)
			if c.GetName() != "" {
				what = fmt.Sprintf("select column %q", c.GetName())
			}
			column(what+" name", c.GetName())
			if c.GetName() != "" && seen[c.GetName()] {
				bad("the select has two columns named %q", c.GetName())
			}
			seen[c.GetName()] = true
			problems = append(problems, validateExpr(what, c.GetExpr())...)
		}
	case KindFilter:
		problems = append(problems, validateExpr("the filter's predicate", n.GetFilter().GetPredicate())...)
	case KindMapBatches:
		fn := n.GetMapBatches().GetFunction()
		if fn == nil {
			bad("map_batches has no function")
		} else {
			problems = append(problems, validateSpec("map_batches function", fn)...)
		}
	case KindKeyedAggregate:
		agg := n.GetKeyedAggregate()
		for _, k := range agg.GetKeys() {
			column("group key", k)
		}
		// Aggregate functions are checked where they are evaluated.
		for j, a := range agg.GetAggregates() {
			column(fmt.Sprintf("aggregate #%d output name", j), a.GetName())
			problems = append(problems, validateUDAF(fmt.Sprintf("aggregate %q", a.GetName()), a)...)
		}
	case KindDropDuplicates:
		subset := n.GetDropDuplicates().GetSubset()
		if len(subset) == 0 {
			bad("drop_duplicates has no subset columns (the client lists every column for subset=None)")
		}
		for _, c := range subset {
			column("drop_duplicates subset column", c)
		}
	case KindIntervalJoin:
		j := n.GetIntervalJoin()
		if len(j.GetLeftKeys()) == 0 || len(j.GetLeftKeys()) != len(j.GetRightKeys()) {
			bad("interval_join needs as many left keys as right keys, at least one; it has %v and %v", j.GetLeftKeys(), j.GetRightKeys())
		}
		for _, k := range j.GetLeftKeys() {
			column("interval_join left key", k)
		}
		for _, k := range j.GetRightKeys() {
			column("interval_join right key", k)
		}
		column("interval_join left time column", j.GetLeftTime())
		column("interval_join right time column", j.GetRightTime())
		if j.GetLowerNs() > j.GetUpperNs() {
			bad("interval_join lower bound %dns is above the upper bound %dns", j.GetLowerNs(), j.GetUpperNs())
		}
		if _, known := planpb.IntervalJoin_How_name[int32(j.GetHow())]; !known {
			bad("interval_join has unknown join type %d", int32(j.GetHow()))
		}
	case KindJoin:
		j := n.GetJoin()
		if len(j.GetLeftKeys()) == 0 || len(j.GetLeftKeys()) != len(j.GetRightKeys()) {
			bad("join needs as many left keys as right keys, at least one; it has %v and %v", j.GetLeftKeys(), j.GetRightKeys())
		}
		for _, k := range j.GetLeftKeys() {
			column("join left key", k)
		}
		for _, k := range j.GetRightKeys() {
			column("join right key", k)
		}
		for _, k := range j.GetLeftUniqueKey() {
			column("join left unique key", k)
		}
		for _, k := range j.GetRightUniqueKey() {
			column("join right unique key", k)
		}
		if j.GetStateTtlMs() < 0 {
			bad("join state TTL %d ms is negative", j.GetStateTtlMs())
		}
		if _, known := planpb.Join_How_name[int32(j.GetHow())]; !known {
			bad("join has unknown join type %d", int32(j.GetHow()))
		}
	case KindWindowAggregate:
		w := n.GetWindowAggregate()
		column("window time column", w.GetTimeColumn())
		for _, k := range w.GetKeys() {
			column("window key", k)
		}
		for j, a := range w.GetAggregates() {
			column(fmt.Sprintf("window aggregate #%d output name", j), a.GetName())
			problems = append(problems, validateUDAF(fmt.Sprintf("window aggregate %q", a.GetName()), a)...)
		}
		if len(w.GetAggregates()) == 0 {
			bad("the window aggregation has no aggregates")
		}
		if w.GetAllowedLatenessMs() < 0 {
			bad("the window's allowed lateness is %dms; it must be 0 or more", w.GetAllowedLatenessMs())
		}
		if _, err := WindowAssigner(w); err != nil {
			bad("%v", err)
		}
	case KindLimit:
		if n := n.GetLimit().GetN(); n < 1 {
			bad("limit n is %d; it must be at least 1", n)
		}
	case KindWatermarkAssigner:
		wa := n.GetWatermarkAssigner()
		column("with_watermark time column", wa.GetTimeColumn())
		if wa.GetMaxOutOfOrdernessMs() < 0 {
			bad("with_watermark max_out_of_orderness is %d ms; it must be 0 or more", wa.GetMaxOutOfOrdernessMs())
		}
		if wa.GetIdleTimeoutMs() < 0 {
			bad("with_watermark idle_timeout is %d ms; it must be positive (0: no idleness)", wa.GetIdleTimeoutMs())
		}
		if ext := wa.GetTimeExtractor(); ext != nil {
			sel := &planpb.Node{Kind: &planpb.Node_Select{Select: ext}}
			for _, p := range validateKind(sel, KindSelect) {
				bad("with_watermark timestamp extractor: %s", p)
			}
			if !slices.ContainsFunc(ext.GetColumns(), func(c *planpb.NamedExpr) bool { return c.GetName() == wa.GetTimeColumn() }) {
				bad("with_watermark timestamp extractor does not compute the time column %q", wa.GetTimeColumn())
			}
		}
	}
	return problems
}

// validateExpr checks what the planner relies on: every expression has a
// kind, column names are set and not reserved, every UDF call has a spec.
// Function names and arities are checked where expressions are evaluated.
func validateExpr(where string, e *planpb.Expr) []string {
	var problems []string
	var walk func(e *planpb.Expr)
	walk = func(e *planpb.Expr) {
		switch k := e.GetKind().(type) {
		case nil:
			problems = append(problems, where+": an expression is empty")
		case *planpb.Expr_Column:
			if p := checkColumn("column", k.Column); p != "" {
				problems = append(problems, where+": "+p)
			}
		case *planpb.Expr_Literal:
			// A literal becomes a column of a batch's rows: its length is multiplied.
			if v := k.Literal.GetStringValue(); len(v) > StringLiteralLimit {
				problems = append(problems, fmt.Sprintf("%s: a string literal of %d bytes, above the runtime's limit of %d (plan.StringLiteralLimit)", where, len(v), StringLiteralLimit))
			}
		case *planpb.Expr_Call:
			if k.Call.GetFunction() == "" {
				problems = append(problems, where+": a call has no function")
			}
			for _, a := range k.Call.GetArgs() {
				walk(a)
			}
		case *planpb.Expr_Udf:
			if k.Udf.GetUdf() == nil {
				problems = append(problems, where+": a UDF call has no UDF spec")
			} else {
				problems = append(problems, validateSpec(where+": udf", k.Udf.GetUdf())...)
			}
			for _, a := range k.Udf.GetArgs() {
				walk(a)
			}
		}
	}
	walk(e)
	return problems
}

func validateSpec(where string, spec *workerpb.UdfSpec) []string {
	var problems []string
	name := spec.GetName()
	if name == "" {
		problems = append(problems, where+" has no name")
	}
	if c := spec.GetConcurrency(); c < 0 {
		problems = append(problems, fmt.Sprintf("%s %q: concurrency is %d, must not be negative (0 when not given)", where, name, c))
	} else if c > ParallelismLimit {
		problems = append(problems, fmt.Sprintf("%s %q: concurrency is %d, above the runtime's limit of %d (plan.ParallelismLimit)", where, name, c, ParallelismLimit))
	}
	if lo, hi := spec.GetConcurrencyMin(), spec.GetConcurrencyMax(); lo != 0 || hi != 0 {
		switch {
		case lo < 1 || hi < lo || hi > ParallelismLimit:
			problems = append(problems, fmt.Sprintf("%s %q: concurrency=(%d, %d): the bounds must satisfy 1 <= min <= max <= %d (plan.ParallelismLimit)", where, name, lo, hi, ParallelismLimit))
		case spec.GetConcurrency() != lo:
			problems = append(problems, fmt.Sprintf("%s %q: concurrency is %d with bounds (%d, %d): a UDF with bounds starts at its min, send concurrency=min", where, name, spec.GetConcurrency(), lo, hi))
		case spec.GetIsAsync():
			problems = append(problems, fmt.Sprintf("%s %q: an async UDF cannot declare concurrency=(min, max): its concurrency is the calls in flight inside each worker, the autoscaler scales operators; give an int", where, name))
		}
	}
	if b := spec.GetBatchSize(); b < 0 {
		problems = append(problems, fmt.Sprintf("%s %q: batch_size is %d, must not be negative (0 when not given)", where, name, b))
	} else if b > BatchSizeLimit {
		problems = append(problems, fmt.Sprintf("%s %q: batch_size is %d, above the runtime's limit of %d (plan.BatchSizeLimit)", where, name, b, BatchSizeLimit))
	}
	return problems
}
