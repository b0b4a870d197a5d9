package plan

import (
	"fmt"
	"strconv"
	"strings"
	"time"

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
		fn := op.Node.MapBatches.Function
		fmt.Fprintf(sb, "    function %s (batch size %d)\n", explainSpec(fn.GetName(), fn), op.BatchSize)
	case op.Kind == KindKeyedAggregate:
		mode := "final: one row per key when its input ends"
		if op.EmitUpdates {
			mode = "updates: the keys that changed, every pipeline.keyed-aggregate.update-interval"
		}
		how := "as the plan asks"
		if op.Node.KeyedAggregate.Emit == EmitAuto {
			how = "auto, input unbounded"
			if op.Bounded {
				how = "auto, input bounded"
			}
		}
		fmt.Fprintf(sb, "    emits %s (%s)\n", mode, how)
		explainUDAFs(sb, op, op.Node.KeyedAggregate.Aggregates)
	case op.Kind == KindDropDuplicates:
		fmt.Fprintf(sb, "    keeps the first row of each (%s)\n", strings.Join(op.Node.DropDuplicates.Subset, ", "))
	case op.Kind == KindIntervalJoin:
		j := op.Node.IntervalJoin
		late := "rows behind the watermark dropped"
		if j.LateRows == KeepLateRows {
			late = "rows behind the watermark to the late-rows outputs of their side"
		}
		fmt.Fprintf(sb, "    %s join of (%s) with (%s) where left.%s + %s <= right.%s <= left.%s + %s; %s\n",
			strings.ToLower(j.How.String()), strings.Join(j.LeftKeys, ", "), strings.Join(j.RightKeys, ", "),
			j.LeftTime, time.Duration(j.LowerNs), j.RightTime, j.LeftTime, time.Duration(j.UpperNs), late)
	case op.Kind == KindJoin:
		fmt.Fprintf(sb, "    %s\n", explainJoin(op.Node.Join))
	case op.Kind == KindWindowAggregate:
		fmt.Fprintf(sb, "    %s\n", explainWindow(op.Node.WindowAggregate))
		explainUDAFs(sb, op, op.Node.WindowAggregate.Aggregates)
	case op.Kind == KindLimit:
		fmt.Fprintf(sb, "    passes the first %d rows (of every subtask upstream, in arrival order), then %s\n",
			op.Node.Limit.N, limitEnds(op))
	case op.Kind == KindWatermarkAssigner:
		wa := op.Node.WatermarkAssigner
		idle := "never idle"
		if wa.IdleTimeoutMs > 0 {
			idle = fmt.Sprintf("idle after %d ms without rows", wa.IdleTimeoutMs)
		}
		fmt.Fprintf(sb, "    event time %s; watermark = max %s - %d ms - 1 ms, every pipeline.auto-watermark-interval when it advanced; %s\n",
			wa.TimeColumn, wa.TimeColumn, wa.MaxOutOfOrdernessMs, idle)
	case op.Role == "":
	case op.Kind == KindSelect:
		cols := make([]string, len(op.Node.Select.Columns))
		for i, c := range op.Node.Select.Columns {
			cols[i] = c.Name
			if ColumnName(c.Expr) != c.Name {
				cols[i] += " = " + formatExpr(c.Expr)
			}
		}
		fmt.Fprintf(sb, "    computes %s\n", strings.Join(nonEmpty(keep, strings.Join(cols, ", ")), ", then "))
	case op.Kind == KindFilter:
		fmt.Fprintf(sb, "    keeps rows where %s\n", formatExpr(op.Node.Filter.Predicate))
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
	if e.Partitioning == PartitionHash {
		name += "(" + strings.Join(e.Keys, ", ") + ")"
	}
	return name
}

func kindName(k Partitioning) string {
	if k == PartitionUnset {
		return "forward"
	}
	return strings.ToLower(k.String())
}

// formatExpr writes an expression compactly, e.g. add(x, 1).
func formatExpr(e Expr) string {
	switch e := e.(type) {
	case *Column:
		return e.Name
	case *Literal:
		return formatLiteral(e)
	case *Call:
		args := make([]string, len(e.Args), len(e.Args)+1)
		for i, a := range e.Args {
			args[i] = formatExpr(a)
		}
		if e.CastTo != "" {
			args = append(args, e.CastTo)
		}
		return e.Function + "(" + strings.Join(args, ", ") + ")"
	case *UDFCall:
		args := make([]string, len(e.Args))
		for i, a := range e.Args {
			args[i] = formatExpr(a)
		}
		return e.UDF.GetName() + "(" + strings.Join(args, ", ") + ")"
	}
	return "?"
}

func formatLiteral(l *Literal) string {
	var s string
	switch l.Kind {
	case LiteralBool:
		s = strconv.FormatBool(l.Bool)
	case LiteralInt:
		s = strconv.FormatInt(l.Int, 10)
	case LiteralFloat:
		s = strconv.FormatFloat(l.Float, 'g', -1, 64)
	case LiteralString:
		s = strconv.Quote(l.String)
	default:
		s = "null"
	}
	if l.Type != "" {
		s += "::" + l.Type
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
func explainJoin(j *Join) string {
	pairs := make([]string, len(j.LeftKeys))
	for i, l := range j.LeftKeys {
		r := ""
		if i < len(j.RightKeys) {
			r = j.RightKeys[i]
		}
		pairs[i] = "left." + l + " = right." + r
	}
	cmp := "=, a NULL key never matches and is not stored"
	if j.NullsEqual {
		cmp = "IS NOT DISTINCT FROM"
	}
	ttl := "kept forever (or table.exec.state.ttl)"
	if j.StateTTLMs > 0 {
		ttl = fmt.Sprintf("kept %s after their last write", time.Duration(j.StateTTLMs)*time.Millisecond)
	}
	out := "append-only when both inputs are"
	if j.How != InnerJoin {
		out = "a retract changelog (padded rows retracted when a match arrives)"
	}
	return fmt.Sprintf("%s join on %s (%s); both sides stored in keyed state, %s; emits %s",
		strings.ToLower(j.How.String()), strings.Join(pairs, " and "), cmp, ttl, out)
}
