package plan

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flinkgo/flinkgo/internal/keygroup"
	"github.com/flinkgo/flinkgo/runtime/connector"
)

// nodeInfo is what the planner derives for one logical node.
type nodeInfo struct {
	node *Node
	kind Kind
	// uid is the user's uid, else "<kind>-<id>".
	uid string
	// name is the node's name, else its uid.
	name            string
	parallelism     int
	parallelismFrom string
}

// Plan turns a job plan (the model: Decode it from the wire form first, or
// build it in Go) into a physical graph: it validates it as Decode does,
// splits selects and filters
// that call Python UDFs into projections and fused UDF operators, sets every
// operator's parallelism and uid, resolves forward edges between operators
// of different parallelism, and chains operators.
//
// opts is copied; job is not modified, and the graph shares its nodes.
// Every error wraps ErrInvalidPlan and lists every problem found.
func Plan(job *JobPlan, opts Options) (*Graph, error) {
	if job == nil {
		return nil, fmt.Errorf("%w: the job plan is nil", ErrInvalidPlan)
	}
	s, problems := resolve(opts, job)
	problems = append(problems, validate(job)...)
	if len(problems) > 0 {
		return nil, invalid(job, problems)
	}
	b := &builder{
		s:          s,
		connectors: opts.Connectors,
		sources:    map[int]connector.Source{},
		sinks:      map[int]connector.Sink{},
		nodes:      map[int]nodeInfo{},
		rescaled:   map[string]bool{},
		output:     map[int]int{},
		g: &Graph{
			Name:               job.Name,
			DefaultParallelism: s.defaultParallelism,
			ForwardMismatch:    s.forwardMismatch,
			Config:             job.Config,
		},
	}
	for _, n := range job.Nodes {
		b.add(n)
	}
	b.checkRescaledUIDs()
	b.checkUIDs()
	b.setMaxParallelism()
	b.resolveForwardMismatch()
	if len(b.problems) > 0 {
		return nil, invalid(job, b.problems)
	}
	b.chain()
	b.resolveBoundedness()
	b.resolveChangelogs()
	if opts.CollectMustEnd {
		b.checkCollectEnds()
	}
	b.resolveLimitEnds()
	if s.pruneColumns {
		b.pruneUnreadColumns()
	}
	if len(b.problems) > 0 {
		return nil, invalid(job, b.problems)
	}
	if opts.Schemas != nil {
		b.deriveSchemas(opts.Schemas)
		if len(b.problems) > 0 {
			return nil, invalid(job, b.problems)
		}
	}
	return b.g, nil
}

type builder struct {
	s     settings
	g     *Graph
	nodes map[int]nodeInfo
	// rescaled: the uids of Options.Parallelism that matched.
	rescaled map[string]bool
	output   map[int]int // node id -> the operator producing its output
	problems []string
	// connectors decodes sources and sinks; sources and sinks are the
	// decoded configs by operator id (nil for one that did not decode).
	connectors Connectors
	sources    map[int]connector.Source
	sinks      map[int]connector.Sink
}

// sourceOf is source operator op's config decoded by its connector; nil
// (and a problem) when it does not decode.
func (b *builder) sourceOf(op *Operator) connector.Source {
	if s, ok := b.sources[op.ID]; ok {
		return s
	}
	var s connector.Source
	if c := b.connectorsOrDefault(); c != nil {
		var err error
		if s, err = c.Source(op.Node.GetSource()); err != nil {
			b.problem("source %s: %v", opLabel(op), err)
		}
	} else {
		b.problem("source %s: the planner was given no connectors (plan.Options.Connectors) to tell whether it ends", opLabel(op))
	}
	b.sources[op.ID] = s
	return s
}

// sinkOf is sink operator op's config decoded by its connector, as
// sourceOf.
func (b *builder) sinkOf(op *Operator) connector.Sink {
	if s, ok := b.sinks[op.ID]; ok {
		return s
	}
	var s connector.Sink
	if c := b.connectorsOrDefault(); c != nil {
		var err error
		if s, err = c.Sink(op.Node.GetSink()); err != nil {
			b.problem("sink %s: %v", opLabel(op), err)
		}
	} else {
		b.problem("sink %s: the planner was given no connectors (plan.Options.Connectors) to tell which changelogs it writes", opLabel(op))
	}
	b.sinks[op.ID] = s
	return s
}

func (b *builder) connectorsOrDefault() Connectors {
	if b.connectors != nil {
		return b.connectors
	}
	return DefaultConnectors
}

func (b *builder) problem(format string, args ...any) {
	b.problems = append(b.problems, fmt.Sprintf(format, args...))
}

// info derives a node's uid, name and parallelism.
func (b *builder) info(n *Node) nodeInfo {
	info := nodeInfo{node: n, kind: n.Kind, uid: n.UID, name: n.Name}
	if info.uid == "" {
		info.uid = fmt.Sprintf("%s-%d", info.kind, n.ID)
	}
	if info.name == "" {
		info.name = info.uid
	}
	info.parallelism, info.parallelismFrom = n.Parallelism, FromExplicit
	if info.parallelism == 0 {
		info.parallelism, info.parallelismFrom = b.s.defaultParallelism, FromDefault
	}
	return info
}

// add appends the operators of one node, its internal edges and its input
// edges.
func (b *builder) add(n *Node) {
	info := b.info(n)
	b.nodes[n.ID] = info
	var ops []*Operator
	switch {
	case info.kind == KindSelect && slices.ContainsFunc(n.Select.Columns, func(c *NamedExpr) bool { return hasUDF(c.Expr) }),
		info.kind == KindFilter && hasUDF(n.Filter.Predicate):
		ops = expand(info, b.s)
	case info.kind == KindWatermarkAssigner:
		ops = watermarkOps(info, b.s)
	default:
		op := &Operator{
			UID: info.uid, Name: info.name, Kind: info.kind, NodeID: n.ID,
			Parallelism: info.parallelism, ParallelismFrom: info.parallelismFrom,
			Node: n, OutputSchema: n.OutputSchema,
		}
		if info.kind == KindKeyedAggregate {
			op.BatchSize = udafBatchSize(n.KeyedAggregate.Aggregates, b.s.batchSize)
		}
		if info.kind == KindMapBatches && n.MapBatches.Function != nil {
			fn := n.MapBatches.Function
			op.BatchSize = b.s.batchSize
			if bs := int(fn.GetBatchSize()); bs > 0 {
				op.BatchSize = bs
			}
			if c := int(fn.GetConcurrency()); c > 0 && !fn.GetIsAsync() {
				op.Parallelism, op.ParallelismFrom = c, FromConcurrency
				op.Concurrency = specBounds(fn)
			}
		}
		if info.kind == KindLimit {
			b.limitParallelism(info, op)
		}
		if info.kind == KindWindowAggregate {
			if len(n.WindowAggregate.Keys) == 0 {
				b.windowAllParallelism(info, op)
			}
			op.BatchSize = udafBatchSize(n.WindowAggregate.Aggregates, b.s.batchSize)
		}
		ops = []*Operator{op}
	}
	b.rescaleNode(info, ops)
	for i, op := range ops {
		op.ID = len(b.g.Operators)
		b.g.Operators = append(b.g.Operators, op)
		if i > 0 {
			b.g.Edges = append(b.g.Edges, &Edge{From: op.ID - 1, To: op.ID, Partitioning: PartitionForward})
		}
	}
	first := ops[0]
	for j, in := range n.Inputs {
		e := &Edge{
			From:         b.output[in.Node],
			To:           first.ID,
			Partitioning: in.Partitioning,
			Keys:         in.Keys,
			Explicit:     in.Partitioning != PartitionUnset,
			FromOutput:   in.Output,
		}
		if !e.Explicit {
			e.Partitioning = PartitionForward
		}
		if keys, keyed := keyedBy(n, j); keyed {
			b.keyedInput(info, first, e, keys)
		}
		if info.kind == KindLimit && !e.Explicit && b.g.Operators[e.From].Parallelism != 1 {
			// Every row goes to the limit's one subtask, which counts them.
			e.Partitioning = PartitionGlobal
		}
		// Internal edges of a node come before its input edges in the list;
		// keep Edges sorted by downstream operator.
		at := len(b.g.Edges)
		for at > 0 && b.g.Edges[at-1].To > e.To {
			at--
		}
		b.g.Edges = slices.Insert(b.g.Edges, at, e)
	}
	b.output[n.ID] = ops[len(ops)-1].ID
}

// keyedBy returns the keys by which a node reads its input number input
// (over keyed state): a keyed aggregation's group keys, drop_duplicates'
// subset, an interval or regular join's left or right keys.
func keyedBy(n *Node, input int) ([]string, bool) {
	switch n.Kind {
	case KindIntervalJoin:
		if input == 0 {
			return n.IntervalJoin.LeftKeys, true
		}
		return n.IntervalJoin.RightKeys, true
	case KindJoin:
		if input == 0 {
			return n.Join.LeftKeys, true
		}
		return n.Join.RightKeys, true
	case KindKeyedAggregate:
		return n.KeyedAggregate.Keys, true
	case KindDropDuplicates:
		return n.DropDuplicates.Subset, true
	case KindWindowAggregate:
		return n.WindowAggregate.Keys, true
	}
	return nil, false
}

// keyedInput makes a keyed operator read its input by key: an input without
// partitioning becomes HASH on the keys (GLOBAL without keys); an explicit
// one must send all rows of a key to one subtask.
func (b *builder) keyedInput(info nodeInfo, op *Operator, e *Edge, keys []string) {
	switch e.Partitioning {
	case PartitionForward:
		if e.Explicit {
			break
		}
		if len(keys) == 0 {
			e.Partitioning = PartitionGlobal
		} else {
			e.Partitioning, e.Keys = PartitionHash, slices.Clone(keys)
		}
		return
	case PartitionGlobal:
		return
	case PartitionHash:
		if !slices.ContainsFunc(e.Keys, func(k string) bool { return !slices.Contains(keys, k) }) {
			return
		}
	}
	if op.Parallelism == 1 {
		return
	}
	upstream := b.g.Operators[e.From]
	b.problem("%s: %s with parallelism %d reads %s with %s partitioning, which would split its groups over several subtasks; "+
		"partition by group keys %v (key_by), or leave the input's partitioning unset", nodeLabel(info.node), info.kind, op.Parallelism, opLabel(upstream), partitioningName(e), keys)
}

// checkUIDs reports operators that share a uid.
func (b *builder) checkUIDs() {
	seen := map[string]*Operator{}
	for _, op := range b.g.Operators {
		if prev, dup := seen[op.UID]; dup {
			b.problem("%s of %s and %s of %s have the same uid %q: give one of the nodes another uid",
				describe(prev), nodeLabel(b.nodes[prev.NodeID].node), describe(op), nodeLabel(b.nodes[op.NodeID].node), op.UID)
			continue
		}
		seen[op.UID] = op
	}
}

// setMaxParallelism sets the graph's max parallelism and reports operators
// whose parallelism exceeds it (docs/semantics.md#key-groups).
func (b *builder) setMaxParallelism() {
	highest, subtasks := 0, 0
	for _, op := range b.g.Operators {
		highest = max(highest, op.Parallelism)
		subtasks += op.Parallelism
	}
	if subtasks > SubtasksLimit {
		b.problem("the job has %d operator subtasks, above the runtime's limit of %d (plan.SubtasksLimit): lower the parallelism, or split the job", subtasks, SubtasksLimit)
	}
	from := b.s.maxParallelFrom
	b.g.MaxParallelism = b.s.maxParallelism
	b.g.MaxParallelismFrom = from
	if b.g.MaxParallelism == 0 {
		b.g.MaxParallelism = keygroup.DefaultMaxParallelism(highest)
		from = "the default"
		b.g.MaxParallelismFrom = fmt.Sprintf("the default for the highest parallelism %d: 1.5x rounded up to a power of two, within [%d, %d]; "+
			"set %s before the first savepoint to rescale beyond it later",
			highest, keygroup.MinDefaultMaxParallelism, keygroup.UpperBoundMaxParallelism, ConfigMaxParallelism)
	}
	for _, op := range b.g.Operators {
		if op.Parallelism > b.g.MaxParallelism && from == restoredFrom {
			b.problem("%s has parallelism %d (%s), above the max parallelism %d of %s (its number of key groups, fixed when the state was first saved): "+
				"lower the parallelism to at most %d",
				opLabel(op), op.Parallelism, op.ParallelismFrom, b.g.MaxParallelism, from, b.g.MaxParallelism)
		} else if op.Parallelism > b.g.MaxParallelism {
			b.problem("%s has parallelism %d (%s), above the max parallelism %d (%s): lower the parallelism, or raise %s up to %d",
				opLabel(op), op.Parallelism, op.ParallelismFrom, b.g.MaxParallelism, from, ConfigMaxParallelism, keygroup.UpperBoundMaxParallelism)
		}
	}
}

// resolveForwardMismatch applies pipeline.forward-mismatch to forward edges
// between operators of different parallelism
// (docs/semantics.md#forward-mismatch).
func (b *builder) resolveForwardMismatch() {
	policy := b.s.forwardMismatch
	setting := ConfigForwardMismatch + "=" + policy
	for i, e := range b.g.Edges {
		from, to := b.g.Operators[e.From], b.g.Operators[e.To]
		if e.Partitioning != PartitionForward || from.Parallelism == to.Parallelism {
			continue
		}
		if policy == ForwardMismatchFail {
			b.problem("forward edge from %s (uid %q, p=%d) to %s (uid %q, p=%d): parallelism differs and %s; "+
				"give both operators the same parallelism, or set %s to %s or %s",
				describe(from), from.UID, from.Parallelism, describe(to), to.UID, to.Parallelism, setting,
				ConfigForwardMismatch, ForwardMismatchRebalance, ForwardMismatchRescale)
			continue
		}
		c := Change{
			Edge: i,
			From: e.Partitioning,
			To:   PartitionRebalance,
			Reason: fmt.Sprintf("forward edge from %s (p=%d) to %s (p=%d): parallelism differs; %s",
				describe(from), from.Parallelism, describe(to), to.Parallelism, setting),
		}
		if policy == ForwardMismatchRescale {
			c.To = PartitionRescale
		}
		e.Partitioning, e.ChangedBy = c.To, setting
		b.g.Changes = append(b.g.Changes, c)
	}
}

// chain gives operators connected by forward edges of equal parallelism,
// where the downstream operator has one input, the same ChainID, as Flink
// does, with one exception: the output of a UDF operator starts a new
// chain. Its results come back from the Python worker while the task feeds
// it more rows; a chained downstream would make the task stop feeding the
// worker while it processes each result, and a channel lets the two
// overlap (the pipeline benchmark's overhead at parallelism 1 went from
// 32 % to 23 %).
func (b *builder) chain() {
	inputs := make([]int, len(b.g.Operators))
	for _, e := range b.g.Edges {
		inputs[e.To]++
	}
	head := make([]int, len(b.g.Operators)) // the chain's first operator
	for i := range head {
		head[i] = i
	}
	// Edges are sorted by downstream operator and operators are in
	// topological order, so an upstream operator's head is final when an
	// edge to it is read.
	for _, e := range b.g.Edges {
		from, to := b.g.Operators[e.From], b.g.Operators[e.To]
		if e.Partitioning == PartitionForward && from.Parallelism == to.Parallelism && inputs[e.To] == 1 &&
			from.Kind != KindUDF && from.Kind != KindMapBatches {
			head[e.To] = head[e.From]
		}
	}
	ids := map[int]int{}
	for i, op := range b.g.Operators {
		id, ok := ids[head[i]]
		if !ok {
			id = len(ids)
			ids[head[i]] = id
		}
		op.ChainID = id
	}
}

// resolveBoundedness marks the operators whose input ends (every source
// upstream is bounded, as the source declares) and resolves the AUTO emit
// mode of keyed aggregations from it: final over a bounded input, updates
// over one that never ends.
func (b *builder) resolveBoundedness() {
	for _, op := range b.g.Operators { // topological order
		switch op.Kind {
		case KindSource:
			op.Bounded = true
			if src := b.sourceOf(op); src != nil {
				op.Bounded = src.Boundedness().Bounded
			}
		case KindLimit:
			op.Bounded = true // it ends its sources once its rows have passed
		default:
			op.Bounded = true
			for _, e := range b.g.Inputs(op.ID) {
				op.Bounded = op.Bounded && b.g.Operators[e.From].Bounded
			}
		}
		if op.Kind == KindKeyedAggregate {
			switch op.Node.KeyedAggregate.Emit {
			case EmitFinal:
				op.EmitUpdates = false
			case EmitUpdates:
				op.EmitUpdates = true
			default:
				op.EmitUpdates = !op.Bounded
			}
			b.checkKeyedUDAFs(op)
		}
	}
}

// checkKeyedUDAFs refuses a pandas UDAF in a keyed aggregation that does
// not read a bounded input to its end and emit once: the UDAF sees a key's
// rows once, all of them (PyFlink runs pandas UDAFs in group aggregations
// in batch mode only).
func (b *builder) checkKeyedUDAFs(op *Operator) {
	for _, a := range op.Node.KeyedAggregate.Aggregates {
		if a.Function != UDAFFunction {
			continue
		}
		switch {
		case !op.Bounded:
			b.problem("%s: the pandas UDAF %q aggregates a key's rows once, at the end of the input, but a source upstream never ends "+
				"(as PyFlink, pandas UDAFs in a keyed aggregation need a bounded input): aggregate per window with key_by(...).window(...).agg(...), "+
				"or bound the source (datagen rows=..., a limit)", nodeLabel(b.nodes[op.Node.ID].node), a.UDF.GetName())
		case op.EmitUpdates:
			b.problem("%s: the pandas UDAF %q aggregates a key's rows once, at the end of the input; emit=\"updates\" would need it "+
				"to be incremental: use emit=\"final\" (or \"auto\")", nodeLabel(b.nodes[op.Node.ID].node), a.UDF.GetName())
		}
	}
}

// windowAllParallelism runs a window without keys in one subtask, as
// Flink's windowAll: every row of a window must meet in one place.
func (b *builder) windowAllParallelism(info nodeInfo, op *Operator) {
	if info.parallelismFrom == FromExplicit && info.parallelism != 1 {
		b.problem("%s: a window without keys runs at parallelism 1 (every row of a window meets in one subtask, "+
			"as Flink's windowAll), it asks for %d: leave its parallelism unset, or key it with key_by(...).window(...)",
			nodeLabel(info.node), info.parallelism)
	}
	op.Parallelism, op.ParallelismFrom = 1, FromWindowAll
}

// limitParallelism runs a limit in one subtask: it counts every row that
// reaches it, so that exactly n pass.
func (b *builder) limitParallelism(info nodeInfo, op *Operator) {
	if info.parallelismFrom == FromExplicit && info.parallelism != 1 {
		b.problem("%s: a limit runs at parallelism 1 (it counts every row in one subtask), it asks for %d: "+
			"leave its parallelism unset", nodeLabel(info.node), info.parallelism)
	}
	op.Parallelism, op.ParallelismFrom = 1, FromLimit
}

// checkCollectEnds refuses a collect sink over an input that never ends:
// collect() returns when the job ends, which it never would.
func (b *builder) checkCollectEnds() {
	for _, op := range b.g.Operators {
		if op.Kind != KindSink || op.Node.GetSink().GetCollect() == nil || op.Bounded {
			continue
		}
		var endless []string
		for _, src := range b.endlessSourcesOf(op.ID) {
			endless = append(endless, fmt.Sprintf("%q (%s)", src.Name, b.sourceOf(src).Boundedness().WhyEndless))
		}
		b.problem("collect sink %q reads an endless source %s; collect() would never return: "+
			"bound it with .limit(n), use a bounded source, or write to a sink and run env.execute_async()",
			op.Name, strings.Join(endless, ", "))
	}
}

// endlessSourcesOf lists the unbounded sources whose rows reach operator id
// through no limit.
func (b *builder) endlessSourcesOf(id int) []*Operator {
	var out []*Operator
	seen := map[int]bool{}
	var walk func(id int)
	walk = func(id int) {
		if seen[id] {
			return
		}
		seen[id] = true
		op := b.g.Operators[id]
		switch {
		case op.Kind == KindSource && !op.Bounded:
			out = append(out, op)
		case op.Kind == KindLimit:
		default:
			for _, e := range b.g.Inputs(id) {
				walk(e.From)
			}
		}
	}
	walk(id)
	slices.SortFunc(out, func(x, y *Operator) int { return x.ID - y.ID })
	return out
}

// resolveLimitEnds decides which sources the limits end: a source whose
// every path to a sink passes through a limit stops reading once each of
// the first limits on those paths has passed its rows. A source with a
// path that no limit bounds reads on: its other consumers want every row.
func (b *builder) resolveLimitEnds() {
	for _, src := range b.g.Operators {
		if src.Kind != KindSource {
			continue
		}
		limits := map[int]bool{}
		unlimited := false
		seen := map[int]bool{}
		var walk func(id int)
		walk = func(id int) {
			if seen[id] {
				return
			}
			seen[id] = true
			if b.g.Operators[id].Kind == KindLimit {
				limits[id] = true
				return
			}
			outs := b.g.Outputs(id)
			if len(outs) == 0 {
				unlimited = true
			}
			for _, e := range outs {
				walk(e.To)
			}
		}
		walk(src.ID)
		if unlimited || len(limits) == 0 {
			continue
		}
		src.EndAfter = len(limits)
		for _, l := range slices.Sorted(maps.Keys(limits)) {
			b.g.Operators[l].Ends = append(b.g.Operators[l].Ends, src.ID)
		}
	}
}

// deriveSchemas fills every operator's output schema, in topological order.
func (b *builder) deriveSchemas(d SchemaDeriver) {
	schemas := make([]*arrow.Schema, len(b.g.Operators))
	for _, op := range b.g.Operators {
		var in []*arrow.Schema
		for _, e := range b.g.Inputs(op.ID) {
			in = append(in, b.g.EdgeSchema(e, schemas))
		}
		if slices.Contains(in, nil) {
			continue // an input failed: reported already
		}
		s, err := d.Schema(op, in)
		if err != nil {
			b.problem("%s: output schema: %v", describe(op), err)
			continue
		}
		op.Schema, schemas[op.ID] = s, s
	}
}
