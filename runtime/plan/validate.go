package plan

import (
	"fmt"
	"slices"
	"strings"

	"github.com/flinkgo/flinkgo/udf/bridge/proto/workerpb"
)

// reservedPrefix starts the names of the temporary columns the planner
// creates; user columns must not use it.
const reservedPrefix = "__flinkgo_"

// validate reports every structural problem of the plan's nodes. The plan
// lists nodes in topological order: every input names a node listed earlier.
func validate(job *JobPlan) []string {
	var problems []string
	if len(job.Nodes) == 0 {
		return []string{"the plan has no nodes"}
	}
	index := make(map[int]int, len(job.Nodes)) // id -> first position
	for i, n := range job.Nodes {
		if n == nil {
			continue
		}
		if _, dup := index[n.ID]; !dup {
			index[n.ID] = i
		}
	}
	for i, n := range job.Nodes {
		if n == nil {
			problems = append(problems, fmt.Sprintf("node #%d of the plan is empty", i))
			continue
		}
		label := nodeLabel(n)
		bad := func(format string, args ...any) {
			problems = append(problems, label+": "+fmt.Sprintf(format, args...))
		}
		if first := index[n.ID]; first != i {
			bad("id %d is also the id of node #%d of the plan %q", n.ID, first, job.Nodes[first].Name)
		}
		if n.Parallelism < 0 {
			bad("parallelism is %d, must not be negative (0 means the default)", n.Parallelism)
		} else if n.Parallelism > ParallelismLimit {
			bad("parallelism is %d, above the runtime's limit of %d (plan.ParallelismLimit)", n.Parallelism, ParallelismLimit)
		}
		if strings.HasPrefix(n.UID, reservedPrefix) {
			bad("uid %q starts with %q, which is reserved", n.UID, reservedPrefix)
		}
		kind := n.Kind
		switch {
		case kind == 0:
			bad("has no kind (source, select, filter, map_batches, keyed_aggregate, drop_duplicates, limit, watermark_assigner, interval_join, join, window_aggregate, union or sink)")
		case kind < 0 || int(kind) >= len(kindNames) || kind == KindUDF:
			// Only a plan built in Go can say so: udf operators are the planner's.
			bad("has kind %s, which is not a node's kind", kind)
			kind = 0
		}
		problems = append(problems, validateInputs(job, n, kind, i, index, label)...)
		for _, p := range validateKind(n, kind) {
			problems = append(problems, label+": "+p)
		}
	}
	return problems
}

func validateInputs(job *JobPlan, n *Node, kind Kind, pos int, index map[int]int, label string) []string {
	var problems []string
	bad := func(format string, args ...any) {
		problems = append(problems, label+": "+fmt.Sprintf(format, args...))
	}
	inputs := n.Inputs
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
		id := in.Node
		switch at, ok := index[id]; {
		case !ok:
			bad("input node %d is unknown", id)
		case id == n.ID:
			bad("reads its own output (a cycle)")
		case at > pos:
			bad("input node %d %q is listed after it: the plan must list nodes in topological order (out-of-order inputs or a cycle)", id, job.Nodes[at].Name)
		default:
			up := job.Nodes[at]
			if up.Kind == KindSink {
				bad("reads the output of sink %s: a sink has no outputs", nodeLabel(up))
			}
			if p := checkOutput(in, up); p != "" {
				bad("%s", p)
			}
		}
		pk := in.Partitioning
		if !pk.Known() {
			bad("input from node %d has unknown partitioning %d", id, int(pk))
			continue
		}
		switch {
		case pk == PartitionHash && len(in.Keys) == 0:
			bad("input from node %d: HASH partitioning needs key columns", id)
		case pk != PartitionHash && len(in.Keys) > 0:
			bad("input from node %d: key columns %v are only allowed with HASH partitioning, not %s", id, in.Keys, pk)
		}
		for _, k := range in.Keys {
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
func checkOutput(in *Input, up *Node) string {
	var keep LateRows
	switch out := in.Output; {
	case out == MainOutput:
		return ""
	case out == LateRowsOutput && up.WindowAggregate != nil:
		keep = up.WindowAggregate.LateRows
	case (out == LateRowsOutput || out == LateRowsRightOutput) && up.IntervalJoin != nil:
		keep = up.IntervalJoin.LateRows
	case out == LateRowsOutput:
		return fmt.Sprintf("reads the late rows of %s, which is neither a window aggregation nor an interval join: only they have late rows", nodeLabel(up))
	case out == LateRowsRightOutput:
		return fmt.Sprintf("reads the right input's late rows of %s, which is not an interval join: only an interval join has two", nodeLabel(up))
	default:
		return fmt.Sprintf("input from node %d reads its output %d, which is unknown (MAIN, LATE_ROWS or LATE_ROWS_RIGHT)", up.ID, out)
	}
	if keep != KeepLateRows {
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
func validateKind(n *Node, kind Kind) []string {
	var problems []string
	bad := func(format string, args ...any) {
		problems = append(problems, fmt.Sprintf(format, args...))
	}
	column := func(what, name string) {
		if p := checkColumn(what, name); p != "" {
			problems = append(problems, p)
		}
	}
	if n.missingSpec() {
		return []string{fmt.Sprintf("the %s node has no %s spec (a plan built in Go must set the field its Kind names)", kind, kind)}
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
		cols := n.Select.Columns
		if len(cols) == 0 {
			bad("the select has no columns")
		}
		seen := map[string]bool{}
		for j, c := range cols {
			what := fmt.Sprintf("select column #%d", j)
			if c.Name != "" {
				what = fmt.Sprintf("select column %q", c.Name)
			}
			column(what+" name", c.Name)
			if c.Name != "" && seen[c.Name] {
				bad("the select has two columns named %q", c.Name)
			}
			seen[c.Name] = true
			problems = append(problems, validateExpr(what, c.Expr)...)
		}
	case KindFilter:
		problems = append(problems, validateExpr("the filter's predicate", n.Filter.Predicate)...)
	case KindMapBatches:
		fn := n.MapBatches.Function
		if fn == nil {
			bad("map_batches has no function")
		} else {
			problems = append(problems, validateSpec("map_batches function", fn)...)
		}
	case KindKeyedAggregate:
		agg := n.KeyedAggregate
		for _, k := range agg.Keys {
			column("group key", k)
		}
		// Aggregate functions are checked where they are evaluated.
		for j, a := range agg.Aggregates {
			column(fmt.Sprintf("aggregate #%d output name", j), a.Name)
			problems = append(problems, validateUDAF(fmt.Sprintf("aggregate %q", a.Name), a)...)
		}
	case KindDropDuplicates:
		subset := n.DropDuplicates.Subset
		if len(subset) == 0 {
			bad("drop_duplicates has no subset columns (the client lists every column for subset=None)")
		}
		for _, c := range subset {
			column("drop_duplicates subset column", c)
		}
	case KindIntervalJoin:
		j := n.IntervalJoin
		if len(j.LeftKeys) == 0 || len(j.LeftKeys) != len(j.RightKeys) {
			bad("interval_join needs as many left keys as right keys, at least one; it has %v and %v", j.LeftKeys, j.RightKeys)
		}
		for _, k := range j.LeftKeys {
			column("interval_join left key", k)
		}
		for _, k := range j.RightKeys {
			column("interval_join right key", k)
		}
		column("interval_join left time column", j.LeftTime)
		column("interval_join right time column", j.RightTime)
		if j.LowerNs > j.UpperNs {
			bad("interval_join lower bound %dns is above the upper bound %dns", j.LowerNs, j.UpperNs)
		}
		if !j.How.Known() {
			bad("interval_join has unknown join type %d", int(j.How))
		}
	case KindJoin:
		j := n.Join
		if len(j.LeftKeys) == 0 || len(j.LeftKeys) != len(j.RightKeys) {
			bad("join needs as many left keys as right keys, at least one; it has %v and %v", j.LeftKeys, j.RightKeys)
		}
		for _, k := range j.LeftKeys {
			column("join left key", k)
		}
		for _, k := range j.RightKeys {
			column("join right key", k)
		}
		for _, k := range j.LeftUniqueKey {
			column("join left unique key", k)
		}
		for _, k := range j.RightUniqueKey {
			column("join right unique key", k)
		}
		if j.StateTTLMs < 0 {
			bad("join state TTL %d ms is negative", j.StateTTLMs)
		}
		if !j.How.Known() {
			bad("join has unknown join type %d", int(j.How))
		}
	case KindWindowAggregate:
		w := n.WindowAggregate
		column("window time column", w.TimeColumn)
		for _, k := range w.Keys {
			column("window key", k)
		}
		for j, a := range w.Aggregates {
			column(fmt.Sprintf("window aggregate #%d output name", j), a.Name)
			problems = append(problems, validateUDAF(fmt.Sprintf("window aggregate %q", a.Name), a)...)
		}
		if len(w.Aggregates) == 0 {
			bad("the window aggregation has no aggregates")
		}
		if w.AllowedLatenessMs < 0 {
			bad("the window's allowed lateness is %dms; it must be 0 or more", w.AllowedLatenessMs)
		}
		if _, err := WindowAssigner(w); err != nil {
			bad("%v", err)
		}
	case KindLimit:
		if n := n.Limit.N; n < 1 {
			bad("limit n is %d; it must be at least 1", n)
		}
	case KindWatermarkAssigner:
		wa := n.WatermarkAssigner
		column("with_watermark time column", wa.TimeColumn)
		if wa.MaxOutOfOrdernessMs < 0 {
			bad("with_watermark max_out_of_orderness is %d ms; it must be 0 or more", wa.MaxOutOfOrdernessMs)
		}
		if wa.IdleTimeoutMs < 0 {
			bad("with_watermark idle_timeout is %d ms; it must be positive (0: no idleness)", wa.IdleTimeoutMs)
		}
		if ext := wa.TimeExtractor; ext != nil {
			sel := &Node{Kind: KindSelect, Select: ext}
			for _, p := range validateKind(sel, KindSelect) {
				bad("with_watermark timestamp extractor: %s", p)
			}
			if !slices.ContainsFunc(ext.Columns, func(c *NamedExpr) bool { return c.Name == wa.TimeColumn }) {
				bad("with_watermark timestamp extractor does not compute the time column %q", wa.TimeColumn)
			}
		}
	}
	return problems
}

// validateExpr checks what the planner relies on: every expression has a
// kind, column names are set and not reserved, every UDF call has a spec.
// Function names and arities are checked where expressions are evaluated.
func validateExpr(where string, e Expr) []string {
	var problems []string
	var walk func(e Expr)
	walk = func(e Expr) {
		switch e := e.(type) {
		case nil:
			problems = append(problems, where+": an expression is empty")
		case *Column:
			if p := checkColumn("column", e.Name); p != "" {
				problems = append(problems, where+": "+p)
			}
		case *Literal:
			// A literal becomes a column of a batch's rows: its length is multiplied.
			if v := e.String; len(v) > StringLiteralLimit {
				problems = append(problems, fmt.Sprintf("%s: a string literal of %d bytes, above the runtime's limit of %d (plan.StringLiteralLimit)", where, len(v), StringLiteralLimit))
			}
		case *Call:
			if e.Function == "" {
				problems = append(problems, where+": a call has no function")
			}
			for _, a := range e.Args {
				walk(a)
			}
		case *UDFCall:
			if e.UDF == nil {
				problems = append(problems, where+": a UDF call has no UDF spec")
			} else {
				problems = append(problems, validateSpec(where+": udf", e.UDF)...)
			}
			for _, a := range e.Args {
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

// missingSpec reports a node whose Kind names a field left nil (a model
// built in Go; Decode always sets it).
func (n *Node) missingSpec() bool {
	switch n.Kind {
	case KindSource:
		return n.Source == nil
	case KindSink:
		return n.Sink == nil
	case KindSelect:
		return n.Select == nil
	case KindFilter:
		return n.Filter == nil
	case KindMapBatches:
		return n.MapBatches == nil
	case KindKeyedAggregate:
		return n.KeyedAggregate == nil
	case KindDropDuplicates:
		return n.DropDuplicates == nil
	case KindLimit:
		return n.Limit == nil
	case KindWatermarkAssigner:
		return n.WatermarkAssigner == nil
	case KindWindowAggregate:
		return n.WindowAggregate == nil
	case KindIntervalJoin:
		return n.IntervalJoin == nil
	case KindJoin:
		return n.Join == nil
	}
	return false
}
