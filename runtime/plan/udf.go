package plan

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/flinkgo/flinkgo/udf/bridge/proto/workerpb"
)

// This file takes the Python UDF calls out of a select or a filter
// (docs/semantics.md#concurrency-and-batch-size). A select becomes
//
//	[pre] udf-0 [pre-1] udf-1 ... [post]
//
// and a filter
//
//	[pre] udf-0 [pre-1] udf-1 ... filter drop
//
// connected by forward edges. Each udf-k operator runs a group of fused calls
// (one worker call per batch); the select before it (pre for udf-0, pre-k for
// udf-k) materializes the UDF arguments that are neither plain columns nor
// another call's output into temporary columns. Post computes the select's
// final columns from the call outputs; filter evaluates the predicate with
// each call replaced by its output column, and drop removes the temporary
// columns. Selects that would do nothing are left out.
//
// Calls are placed in dependency order (inner calls first, then columns left
// to right), each in the first operator at or after the ones that produce its
// inputs whose explicit concurrency is compatible: the same, or none on
// either side (async UDFs and UDFs without concurrency fit anywhere). An
// argument computed from another call's output by a built-in expression
// needs a select between the two, so its call goes at least one operator
// further.

// hasUDF reports whether e calls a Python UDF.
func hasUDF(e Expr) bool {
	switch e := e.(type) {
	case *UDFCall:
		return true
	case *Call:
		return slices.ContainsFunc(e.Args, hasUDF)
	}
	return false
}

// columnRefs appends the columns e reads, in order of first use, to refs.
func columnRefs(e Expr, refs []string) []string {
	switch e := e.(type) {
	case *Column:
		if !slices.Contains(refs, e.Name) {
			refs = append(refs, e.Name)
		}
	case *Call:
		for _, a := range e.Args {
			refs = columnRefs(a, refs)
		}
	case *UDFCall:
		for _, a := range e.Args {
			refs = columnRefs(a, refs)
		}
	}
	return refs
}

func columnExpr(name string) Expr { return &Column{Name: name} }

// udfStage is one UDF operator being built.
type udfStage struct {
	// concurrency is the explicit concurrency of its synchronous calls.
	concurrency int
	// bounds are their concurrency=(min, max), zero when none declares any.
	bounds Bounds
	calls  []*workerpb.UdfCall
	// temps are the arguments the select before this stage computes.
	temps []*NamedExpr
}

// expander splits one select or filter node.
type expander struct {
	info    nodeInfo
	s       settings
	stages  []*udfStage
	rank    map[string]int  // canonical column order: input columns first, then created ones
	created map[string]bool // temporary columns and call outputs
	ntemp   int
}

func (x *expander) see(name string) {
	if _, ok := x.rank[name]; !ok {
		x.rank[name] = len(x.rank)
	}
}

func (x *expander) newTemp() string {
	t := fmt.Sprintf("%stmp_%d", reservedPrefix, x.ntemp)
	x.ntemp++
	x.see(t)
	x.created[t] = true
	return t
}

// canon returns the names of set in canonical order.
func (x *expander) canon(set map[string]bool) []string {
	names := make([]string, 0, len(set))
	for n := range set {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int { return x.rank[a] - x.rank[b] })
	return names
}

// rewrite returns e with every UDF call replaced by a reference to its output
// column, and the last stage whose output it reads (-1 for none).
func (x *expander) rewrite(e Expr) (Expr, int) {
	switch e := e.(type) {
	case *UDFCall:
		return x.place(e, "")
	case *Call:
		last, changed := -1, false
		args := make([]Expr, len(e.Args))
		for i, a := range e.Args {
			var s int
			args[i], s = x.rewrite(a)
			last, changed = max(last, s), changed || args[i] != a
		}
		if !changed {
			return e, last
		}
		return &Call{Function: e.Function, Args: args, CastTo: e.CastTo}, last
	}
	return e, -1
}

// place adds the call u to a stage and returns its output column and stage.
// output is the column to produce, or "" for a temporary one.
func (x *expander) place(u *UDFCall, output string) (Expr, int) {
	args := make([]string, len(u.Args))
	var temps []*NamedExpr
	first := 0
	for i, a := range u.Args {
		r, s := x.rewrite(a)
		if c, ok := r.(*Column); ok {
			// An input column, or the output of a call in stage s, which
			// this call may follow in the same worker chain.
			args[i], first = c.Name, max(first, s)
			continue
		}
		args[i] = x.newTemp()
		temps = append(temps, &NamedExpr{Name: args[i], Expr: r})
		first = max(first, s+1) // computed by the select before this stage
	}
	if output == "" {
		output = x.newTemp()
	} else {
		x.see(output)
		x.created[output] = true
	}
	spec := u.UDF
	k := x.stageFor(first, spec)
	st := x.stages[k]
	st.temps = append(st.temps, temps...)
	st.calls = append(st.calls, &workerpb.UdfCall{Udf: spec, Args: args, Output: output})
	return columnExpr(output), k
}

// stageFor returns the first stage at or after first that spec may join,
// adding one when none fits.
func (x *expander) stageFor(first int, spec *workerpb.UdfSpec) int {
	c, b := 0, Bounds{}
	if !spec.GetIsAsync() {
		c, b = int(spec.GetConcurrency()), specBounds(spec)
	}
	for k := first; k < len(x.stages); k++ {
		st := x.stages[k]
		if st.fits(c, b) {
			st.concurrency = max(st.concurrency, c)
			if !b.Zero() {
				st.bounds = b
			}
			return k
		}
	}
	x.stages = append(x.stages, &udfStage{concurrency: c, bounds: b})
	return len(x.stages) - 1
}

// fits reports whether a synchronous call with concurrency c and bounds b
// may join the stage: a call without either joins any stage; one with a
// fixed concurrency, a stage without bounds and with no other
// concurrency; one with bounds, a stage with the same bounds or with no
// concurrency at all (the autoscaler scales the operator as one).
func (st *udfStage) fits(c int, b Bounds) bool {
	switch {
	case !b.Zero():
		return st.bounds == b || st.bounds.Zero() && st.concurrency == 0
	case c > 0:
		return st.bounds.Zero() && (st.concurrency == 0 || st.concurrency == c)
	}
	return true
}

// expand turns a select or filter node that calls UDFs into its operators,
// in order; the caller connects them with forward edges.
func expand(info nodeInfo, s settings) []*Operator {
	n := info.node
	x := &expander{info: info, s: s, rank: map[string]int{}, created: map[string]bool{}}
	if n.Filter != nil {
		for _, c := range columnRefs(n.Filter.Predicate, nil) {
			x.see(c)
		}
		pred, _ := x.rewrite(n.Filter.Predicate)
		return x.filterOps(pred)
	}
	var refs []string
	for _, c := range n.Select.Columns {
		refs = columnRefs(c.Expr, refs)
	}
	for _, c := range refs {
		x.see(c)
	}
	final := make([]*NamedExpr, len(n.Select.Columns))
	for i, c := range n.Select.Columns {
		var e Expr
		if u, ok := c.Expr.(*UDFCall); ok && !slices.Contains(refs, c.Name) {
			// The call can produce the column under its final name.
			e, _ = x.place(u, c.Name)
		} else {
			e, _ = x.rewrite(c.Expr)
		}
		final[i] = &NamedExpr{Name: c.Name, Expr: e}
	}
	return x.selectOps(final)
}

// selectOps builds a select's operators backwards from its final columns:
// each operator outputs exactly the columns the ones after it read.
func (x *expander) selectOps(final []*NamedExpr) []*Operator {
	var rev []*Operator
	var need []string
	identity := true
	for _, c := range final {
		if ColumnName(c.Expr) != c.Name {
			identity = false
		}
	}
	if identity {
		// The last UDF operator outputs the final columns in order.
		for _, c := range final {
			need = append(need, c.Name)
		}
		rev = append(rev, nil) // placeholder: no post
	} else {
		rev = append(rev, x.selectOp("post", final, false, nil))
		var refs []string
		for _, c := range final {
			refs = columnRefs(c.Expr, refs)
		}
		need = x.canon(toSet(refs))
	}
	for k := len(x.stages) - 1; k >= 0; k-- {
		st := x.stages[k]
		op, in := x.udfOp(k, need, false)
		rev = append(rev, op)
		needIn := toSet(in)
		for _, c := range need {
			if !slices.ContainsFunc(st.calls, func(c2 *workerpb.UdfCall) bool { return c2.GetOutput() == c }) {
				needIn[c] = true
			}
		}
		out := x.canon(needIn)
		if len(st.temps) == 0 {
			need = out
			continue
		}
		cols := make([]*NamedExpr, len(out))
		reads := map[string]bool{}
		for i, c := range out {
			if t := findTemp(st.temps, c); t != nil {
				cols[i] = t
				for _, r := range columnRefs(t.Expr, nil) {
					reads[r] = true
				}
			} else {
				cols[i] = &NamedExpr{Name: c, Expr: columnExpr(c)}
				reads[c] = true
			}
		}
		rev = append(rev, x.selectOp(preRole(k), cols, false, nil))
		need = x.canon(reads)
	}
	return finish(rev, x.info)
}

// filterOps builds a filter's operators backwards: each operator keeps its
// input's columns and drops the temporary ones nothing after it reads.
func (x *expander) filterOps(pred Expr) []*Operator {
	need := map[string]bool{}
	for _, c := range columnRefs(pred, nil) {
		if x.created[c] {
			need[c] = true
		}
	}
	rev := []*Operator{
		x.selectOp("drop", nil, true, x.canon(need)),
		x.filterOp(pred),
	}
	for k := len(x.stages) - 1; k >= 0; k-- {
		st := x.stages[k]
		passed := map[string]bool{}
		for c := range need {
			if !slices.ContainsFunc(st.calls, func(c2 *workerpb.UdfCall) bool { return c2.GetOutput() == c }) {
				passed[c] = true
			}
		}
		results := x.canon(need)
		results = slices.DeleteFunc(results, func(c string) bool { return passed[c] })
		op, in := x.udfOp(k, results, true)
		needIn := maps.Clone(passed)
		for _, c := range in {
			if x.created[c] {
				needIn[c] = true
			}
		}
		op.DropColumns = x.canon(minus(needIn, passed))
		rev = append(rev, op)
		if len(st.temps) == 0 {
			need = needIn
			continue
		}
		kept := map[string]bool{}
		for c := range needIn {
			if findTemp(st.temps, c) == nil {
				kept[c] = true
			}
		}
		reads := maps.Clone(kept)
		for _, t := range st.temps {
			for _, r := range columnRefs(t.Expr, nil) {
				if x.created[r] {
					reads[r] = true
				}
			}
		}
		rev = append(rev, x.selectOp(preRole(k), st.temps, true, x.canon(minus(reads, kept))))
		need = reads
	}
	return finish(rev, x.info)
}

// udfOp builds stage k's operator with the given output columns and returns
// it with the columns its worker reads.
func (x *expander) udfOp(k int, output []string, keepInput bool) (*Operator, []string) {
	st := x.stages[k]
	chain := &UDFChain{Calls: st.calls, OutputColumns: output, Concurrency: st.concurrency}
	produced := map[string]bool{}
	names := make([]string, 0, len(st.calls))
	batch := 0
	for _, c := range st.calls {
		for _, a := range c.GetArgs() {
			if !produced[a] && !slices.Contains(chain.InputColumns, a) {
				chain.InputColumns = append(chain.InputColumns, a)
			}
		}
		produced[c.GetOutput()] = true
		spec := c.GetUdf()
		names = append(names, spec.GetName())
		chain.Async = chain.Async || spec.GetIsAsync()
		if b := int(spec.GetBatchSize()); b > 0 && (batch == 0 || b < batch) {
			batch = b
		}
	}
	for _, c := range output {
		if produced[c] {
			chain.ResultColumns = append(chain.ResultColumns, c)
		}
	}
	if batch == 0 {
		batch = x.s.batchSize
	}
	op := &Operator{
		UID:             fmt.Sprintf("%s/udf-%d", x.info.uid, k),
		Role:            fmt.Sprintf("udf-%d", k),
		Name:            strings.Join(names, "+"),
		Kind:            KindUDF,
		NodeID:          x.info.node.ID,
		Parallelism:     x.info.parallelism,
		ParallelismFrom: x.info.parallelismFrom,
		UDF:             chain,
		KeepInput:       keepInput,
		BatchSize:       batch,
	}
	if st.concurrency > 0 {
		op.Parallelism, op.ParallelismFrom = st.concurrency, FromConcurrency
	}
	op.Concurrency = st.bounds
	return op, chain.InputColumns
}

// selectOp builds a select the planner adds.
func (x *expander) selectOp(role string, cols []*NamedExpr, keepInput bool, drop []string) *Operator {
	op := x.helper(role, KindSelect)
	op.Node.Kind, op.Node.Select = KindSelect, &Select{Columns: cols}
	op.KeepInput, op.DropColumns = keepInput, drop
	return op
}

func (x *expander) filterOp(pred Expr) *Operator {
	op := x.helper("filter", KindFilter)
	op.Node.Kind, op.Node.Filter = KindFilter, &Filter{Predicate: pred}
	return op
}

func (x *expander) helper(role string, kind Kind) *Operator {
	uid, name := x.info.uid+"/"+role, x.info.name+"/"+role
	return &Operator{
		UID: uid, Name: name, Kind: kind, Role: role,
		NodeID:          x.info.node.ID,
		Parallelism:     x.info.parallelism,
		ParallelismFrom: x.info.parallelismFrom,
		Node:            &Node{ID: x.info.node.ID, UID: uid, Name: name},
	}
}

func preRole(k int) string {
	if k == 0 {
		return "pre"
	}
	return fmt.Sprintf("pre-%d", k)
}

// finish reverses the operators built backwards, leaves out the missing
// ones, and gives the last one the node's output schema.
func finish(rev []*Operator, info nodeInfo) []*Operator {
	var ops []*Operator
	for i := len(rev) - 1; i >= 0; i-- {
		if rev[i] != nil {
			ops = append(ops, rev[i])
		}
	}
	last := ops[len(ops)-1]
	last.OutputSchema = info.node.OutputSchema
	if last.Node != nil {
		last.Node.OutputSchema = last.OutputSchema
	}
	return ops
}

func findTemp(temps []*NamedExpr, name string) *NamedExpr {
	for _, t := range temps {
		if t.Name == name {
			return t
		}
	}
	return nil
}

func toSet(names []string) map[string]bool {
	set := make(map[string]bool, len(names))
	for _, n := range names {
		set[n] = true
	}
	return set
}

// minus returns the names of a that are not in b.
func minus(a, b map[string]bool) map[string]bool {
	d := map[string]bool{}
	for k := range a {
		if !b[k] {
			d[k] = true
		}
	}
	return d
}
