package plan

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
	"github.com/flinkgo/flinkgo/udf/bridge/proto/workerpb"
)

// Explain describes the graph: every operator in topological order with its
// uid, kind, parallelism, chain and inputs, what the operators the planner
// added compute, the UDF chains, and last the forward edges the
// forward-mismatch policy changed, and why. The text is deterministic.
func (g *Graph) Explain() string {
	var sb strings.Builder
	chains := 0
	for _, op := range g.Operators {
		chains = max(chains, op.ChainID+1)
	}
	fmt.Fprintf(&sb, "job %q: %d operators in %d chains; default parallelism %d, max parallelism %d, %s=%s\n",
		g.Name, len(g.Operators), chains, g.DefaultParallelism, g.MaxParallelism, ConfigForwardMismatch, g.ForwardMismatch)
	fmt.Fprintf(&sb, "max parallelism %d from %s\n", g.MaxParallelism, g.MaxParallelismFrom)
	for _, w := range g.Warnings() {
		fmt.Fprintf(&sb, "warning: %s\n", w)
	}
	for _, op := range g.Operators {
		fmt.Fprintf(&sb, "#%d %s %q uid=%s p=%d (%s) chain=%d\n",
			op.ID, op.Kind, op.Name, op.UID, op.Parallelism, op.ParallelismFrom, op.ChainID)
		for _, e := range g.Inputs(op.ID) {
			late := ""
			switch e.FromOutput {
			case LateRowsOutput:
				late = " late rows"
			case LateRowsRightOutput:
				late = " late rows of its right input"
			}
			fmt.Fprintf(&sb, "    input #%d%s: %s", e.From, late, partitioningName(e))
			if e.ChangedBy != "" {
				fmt.Fprintf(&sb, " (was forward; %s)", e.ChangedBy)
			}
			sb.WriteString("\n")
		}
		explainWork(&sb, op)
		if len(op.Pruned) > 0 {
			fmt.Fprintf(&sb, "    pruned: %s (no operator downstream reads them; %s)\n", strings.Join(op.Pruned, ", "), ConfigPruneColumns)
		}
		sb.WriteString(g.changelogLine(op))
		if op.Schema != nil {
			fields := make([]string, op.Schema.NumFields())
			for i, f := range op.Schema.Fields() {
				fields[i] = f.Name + " " + f.Type.String()
			}
			fmt.Fprintf(&sb, "    output: %s\n", strings.Join(fields, ", "))
		}
	}
	if len(g.Changes) == 0 {
		fmt.Fprintf(&sb, "forward edges changed by %s: none\n", ConfigForwardMismatch)
		return sb.String()
	}
	fmt.Fprintf(&sb, "forward edges changed by %s:\n", ConfigForwardMismatch)
	for _, c := range g.Changes {
		e := g.Edges[c.Edge]
		fmt.Fprintf(&sb, "    #%d -> #%d %s -> %s: %s\n", e.From, e.To, kindName(c.From), kindName(c.To), c.Reason)
	}
	return sb.String()
}

// explainWork describes what the operators the planner added compute, and
// the Python side of udf and map_batches operators.
func explainWork(sb *strings.Builder, op *Operator) {
	keep := ""
	if op.KeepInput {
		keep = "input columns"
		if len(op.DropColumns) > 0 {
			keep += " except " + strings.Join(op.DropColumns, ", ")
		}
	}
	switch {
	case op.Kind == KindUDF:
		calls := make([]string, len(op.UDF.Calls))
		for i, c := range op.UDF.Calls {
			calls[i] = explainCall(c)
		}
		fmt.Fprintf(sb, "    calls (batch size %d): %s\n", op.BatchSize, strings.Join(calls, "; "))
		out := strings.Join(op.UDF.OutputColumns, ", ")
		if keep != "" {
			out = strings.Join(nonEmpty(keep, out), ", then ")
		}
		fmt.Fprintf(sb, "    worker reads %s, returns %s; emits %s\n",
			list(op.UDF.InputColumns), list(op.UDF.ResultColumns), out)
	case op.Kind == KindMapBatches:
		fn := op.Node.GetMapBatches().GetFunction()
		fmt.Fprintf(sb, "    function %s (batch size %d)\n", explainSpec(fn.GetName(), fn), op.BatchSize)
	case op.Kind == KindKeyedAggregate:
		mode := "final: one row per key when its input ends"
		if op.EmitUpdates {
			mode = "updates: the keys that changed, every pipeline.keyed-aggregate.update-interval"
		}
		how := "as the plan asks"
		if op.Node.GetKeyedAggregate().GetEmit() == planpb.KeyedAggregate_EMIT_AUTO {
			how = "auto, input unbounded"
			if op.Bounded {
				how = "auto, input bounded"
			}
		}
		fmt.Fprintf(sb, "    emits %s (%s)\n", mode, how)
		explainUDAFs(sb, op, op.Node.GetKeyedAggregate().GetAggregates())
	case op.Kind == KindDropDuplicates:
		fmt.Fprintf(sb, "    keeps the first row of each (%s)\n", strings.Join(op.Node.GetDropDuplicates().GetSubset(), ", "))
	case op.Kind == KindIntervalJoin:
		j := op.Node.GetIntervalJoin()
		late := "rows behind the watermark dropped"
		if j.GetLateRows() == planpb.WindowAggregate_KEEP {
			late = "rows behind the watermark to the late-rows outputs of their side"
		}
		fmt.Fprintf(sb, "    %s join of (%s) with (%s) where left.%s + %s <= right.%s <= left.%s + %s; %s\n",
			strings.ToLower(j.GetHow().String()), strings.Join(j.GetLeftKeys(), ", "), strings.Join(j.GetRightKeys(), ", "),
			j.GetLeftTime(), time.Duration(j.GetLowerNs()), j.GetRightTime(), j.GetLeftTime(), time.Duration(j.GetUpperNs()), late)
	case op.Kind == KindJoin:
		fmt.Fprintf(sb, "    %s\n", explainJoin(op.Node.GetJoin()))
	case op.Kind == KindWindowAggregate:
		fmt.Fprintf(sb, "    %s\n", explainWindow(op.Node.GetWindowAggregate()))
		explainUDAFs(sb, op, op.Node.GetWindowAggregate().GetAggregates())
	case op.Kind == KindLimit:
		fmt.Fprintf(sb, "    passes the first %d rows (of every subtask upstream, in arrival order), then %s\n",
			op.Node.GetLimit().GetN(), limitEnds(op))
	case op.Kind == KindWatermarkAssigner:
		wa := op.Node.GetWatermarkAssigner()
		idle := "never idle"
		if wa.GetIdleTimeoutMs() > 0 {
			idle = fmt.Sprintf("idle after %d ms without rows", wa.GetIdleTimeoutMs())
		}
		fmt.Fprintf(sb, "    event time %s; watermark = max %s - %d ms - 1 ms, every pipeline.auto-watermark-interval when it advanced; %s\n",
			wa.GetTimeColumn(), wa.GetTimeColumn(), wa.GetMaxOutOfOrdernessMs(), idle)
	case op.Role == "":
	case op.Kind == KindSelect:
		cols := make([]string, len(op.Node.GetSelect().GetColumns()))
		for i, c := range op.Node.GetSelect().GetColumns() {
			cols[i] = c.GetName()
			if c.GetExpr().GetColumn() != c.GetName() {
				cols[i] += " = " + formatExpr(c.GetExpr())
			}
		}
		fmt.Fprintf(sb, "    computes %s\n", strings.Join(nonEmpty(keep, strings.Join(cols, ", ")), ", then "))
	case op.Kind == KindFilter:
		fmt.Fprintf(sb, "    keeps rows where %s\n", formatExpr(op.Node.GetFilter().GetPredicate()))
	}
}

func explainCall(c *workerpb.UdfCall) string {
	return fmt.Sprintf("%s -> %s", explainSpec(c.GetUdf().GetName()+"("+strings.Join(c.GetArgs(), ", ")+")", c.GetUdf()), c.GetOutput())
}

// explainSpec adds a UDF's concurrency and batch size to what.
func explainSpec(what string, spec *workerpb.UdfSpec) string {
	var attrs []string
	if spec.GetIsAsync() {
		attrs = append(attrs, "async")
	}
	if b := specBounds(spec); !b.Zero() {
		attrs = append(attrs, fmt.Sprintf("concurrency=(%d, %d)", b.Min, b.Max))
	} else if c := spec.GetConcurrency(); c > 0 {
		attrs = append(attrs, fmt.Sprintf("concurrency=%d", c))
	}
	if b := spec.GetBatchSize(); b > 0 {
		attrs = append(attrs, fmt.Sprintf("batch_size=%d", b))
	}
	if len(attrs) == 0 {
		return what
	}
	return what + " [" + strings.Join(attrs, ", ") + "]"
}

func nonEmpty(parts ...string) []string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return []string{"nothing"}
	}
	return out
}

func list(names []string) string {
	if len(names) == 0 {
		return "nothing"
	}
	return strings.Join(names, ", ")
}

// partitioningName is how an edge's partitioning is shown: "forward",
// "hash(k1, k2)", ...
func partitioningName(e *Edge) string {
	name := kindName(e.Partitioning)
	if e.Partitioning == planpb.Partitioning_HASH {
		name += "(" + strings.Join(e.Keys, ", ") + ")"
	}
	return name
}

func kindName(k planpb.Partitioning_Kind) string {
	if k == planpb.Partitioning_FORWARD_IMPLICIT {
		return "forward"
	}
	return strings.ToLower(k.String())
}

// formatExpr writes an expression compactly, e.g. add(x, 1).
func formatExpr(e *planpb.Expr) string {
	switch k := e.GetKind().(type) {
	case *planpb.Expr_Column:
		return k.Column
	case *planpb.Expr_Literal:
		return formatLiteral(k.Literal)
	case *planpb.Expr_Call:
		args := make([]string, len(k.Call.GetArgs()), len(k.Call.GetArgs())+1)
		for i, a := range k.Call.GetArgs() {
			args[i] = formatExpr(a)
		}
		if k.Call.GetCastTo() != "" {
			args = append(args, k.Call.GetCastTo())
		}
		return k.Call.GetFunction() + "(" + strings.Join(args, ", ") + ")"
	case *planpb.Expr_Udf:
		args := make([]string, len(k.Udf.GetArgs()))
		for i, a := range k.Udf.GetArgs() {
			args[i] = formatExpr(a)
		}
		return k.Udf.GetUdf().GetName() + "(" + strings.Join(args, ", ") + ")"
	}
	return "?"
}

func formatLiteral(l *planpb.Literal) string {
	var s string
	switch v := l.GetValue().(type) {
	case *planpb.Literal_BoolValue:
		s = strconv.FormatBool(v.BoolValue)
	case *planpb.Literal_IntValue:
		s = strconv.FormatInt(v.IntValue, 10)
	case *planpb.Literal_FloatValue:
		s = strconv.FormatFloat(v.FloatValue, 'g', -1, 64)
	case *planpb.Literal_StringValue:
		s = strconv.Quote(v.StringValue)
	default:
		s = "null"
	}
	if l.GetType() != "" {
		s += "::" + l.GetType()
	}
	return s
}

// limitEnds says what a limit does once its rows have passed.
func limitEnds(op *Operator) string {
	if len(op.Ends) == 0 {
		return "drops the rest (its sources feed other sinks too, so they read on)"
	}
	return fmt.Sprintf("ends its input: stops %d source(s)", len(op.Ends))
}

// explainJoin says what a regular join matches, keeps and emits.
func explainJoin(j *planpb.Join) string {
	pairs := make([]string, len(j.GetLeftKeys()))
	for i, l := range j.GetLeftKeys() {
		r := ""
		if i < len(j.GetRightKeys()) {
			r = j.GetRightKeys()[i]
		}
		pairs[i] = "left." + l + " = right." + r
	}
	cmp := "=, a NULL key never matches and is not stored"
	if j.GetNullsEqual() {
		cmp = "IS NOT DISTINCT FROM"
	}
	ttl := "kept forever (or table.exec.state.ttl)"
	if j.GetStateTtlMs() > 0 {
		ttl = fmt.Sprintf("kept %s after their last write", time.Duration(j.GetStateTtlMs())*time.Millisecond)
	}
	out := "append-only when both inputs are"
	if j.GetHow() != planpb.Join_INNER {
		out = "a retract changelog (padded rows retracted when a match arrives)"
	}
	return fmt.Sprintf("%s join on %s (%s); both sides stored in keyed state, %s; emits %s",
		strings.ToLower(j.GetHow().String()), strings.Join(pairs, " and "), cmp, ttl, out)
}
