package plan

import (
	"maps"
	"slices"
)

// readColumns is what an operator reads of one input: every column (all),
// or the named ones. The zero value reads none.
type readColumns struct {
	all   bool
	names map[string]bool
}

func everyColumn() readColumns { return readColumns{all: true} }

func (r *readColumns) add(names ...string) {
	if r.all {
		return
	}
	if r.names == nil {
		r.names = map[string]bool{}
	}
	for _, n := range names {
		if n != "" {
			r.names[n] = true
		}
	}
}

func (r *readColumns) union(o readColumns) {
	if o.all {
		*r = everyColumn()
		return
	}
	r.add(slices.Collect(maps.Keys(o.names))...)
}

func (r readColumns) has(name string) bool { return r.all || r.names[name] }

// pruneUnreadColumns drops, from the selects and UDF operators whose
// output lists its columns, the columns that no operator downstream reads
// (through chains, UDF pass-through, filters, limits, watermark assigners;
// sinks, collect, map_batches, unions and joins read every column), so
// that they cross no exchange and no channel (docs/semantics.md#planning).
// It walks the graph backwards: what an operator reads of its input
// follows from what its consumers read of its output.
//
// Streams with row kinds (changelogs) are left whole: their upsert keys
// were resolved on the full columns. Operators whose output is their
// input's columns (a source, a filter, the operators split from a filter)
// are not given a projection: pruning folds into an existing one only.
func (b *builder) pruneUnreadColumns() {
	g := b.g
	reads := map[*Edge]readColumns{} // what each edge's consumer reads of it
	for i := len(g.Operators) - 1; i >= 0; i-- {
		op := g.Operators[i]
		out, late := everyColumn(), map[int]readColumns{}
		if outs := g.Outputs(op.ID); len(outs) > 0 {
			out = readColumns{}
			for _, e := range outs {
				if e.FromOutput == MainOutput {
					out.union(reads[e])
					continue
				}
				r := late[LateRowsInput(e.FromOutput)]
				r.union(reads[e])
				late[LateRowsInput(e.FromOutput)] = r
			}
		}
		if !out.all && !op.Changelog.IsChangelog() {
			prune(op, out)
		}
		for j, e := range g.Inputs(op.ID) {
			r := inputReads(op, j, out)
			r.union(late[j]) // late rows pass the input's columns unchanged
			reads[e] = r
		}
	}
}

// prune removes from a select's columns, or from a UDF operator's
// pass-through columns, those out does not hold, and records them in
// Operator.Pruned. A select keeps at least one column: a batch without
// columns would lose its row count.
func prune(op *Operator, out readColumns) {
	if op.KeepInput {
		return
	}
	switch op.Kind {
	case KindSelect:
		cols := op.Node.Select.Columns
		var keep []*NamedExpr
		var dropped []string
		for _, c := range cols {
			if out.has(c.Name) {
				keep = append(keep, c)
			} else {
				dropped = append(dropped, c.Name)
			}
		}
		if len(dropped) == 0 {
			return
		}
		if len(keep) == 0 {
			keep, dropped = cols[:1], dropped[1:]
			if len(dropped) == 0 {
				return
			}
		}
		// The node may be the user's, shared with the job plan: change a
		// copy (the expressions are read-only and shared).
		node := *op.Node
		node.Select = &Select{Columns: keep}
		node.OutputSchema = nil // the client's schema of the node lists the pruned columns
		op.Node, op.OutputSchema, op.Pruned = &node, nil, dropped
	case KindUDF:
		var keep, dropped []string
		for _, c := range op.UDF.OutputColumns {
			if out.has(c) || slices.Contains(op.UDF.ResultColumns, c) {
				keep = append(keep, c)
			} else {
				dropped = append(dropped, c)
			}
		}
		if len(dropped) == 0 {
			return
		}
		chain := *op.UDF
		chain.OutputColumns = keep
		op.UDF, op.OutputSchema, op.Pruned = &chain, nil, dropped
	}
}

// inputReads is what op reads of its input number input, given what its
// consumers read of its output (out). Kinds whose reads the planner does
// not know by name (map_batches calls Python with whole batches; sinks
// write every column; a union and joins output every column of their
// inputs, a join renaming clashes) read every column.
func inputReads(op *Operator, input int, out readColumns) readColumns {
	r := readColumns{}
	passes := func(extra ...string) readColumns { // output rows are input rows
		if out.all {
			return everyColumn()
		}
		r.union(out)
		r.add(extra...)
		return r
	}
	switch op.Kind {
	case KindSelect:
		var refs []string
		for _, c := range op.Node.Select.Columns {
			refs = columnRefs(c.Expr, refs)
		}
		if op.KeepInput {
			return passes(refs...)
		}
		r.add(refs...)
		return r
	case KindUDF:
		if op.KeepInput {
			return passes(op.UDF.InputColumns...)
		}
		r.add(op.UDF.InputColumns...)
		for _, c := range op.UDF.OutputColumns {
			if !slices.Contains(op.UDF.ResultColumns, c) {
				r.add(c)
			}
		}
		return r
	case KindFilter:
		return passes(columnRefs(op.Node.Filter.Predicate, nil)...)
	case KindLimit:
		return passes()
	case KindWatermarkAssigner:
		return passes(op.Node.WatermarkAssigner.TimeColumn)
	case KindDropDuplicates:
		subset := op.Node.DropDuplicates.Subset
		if len(subset) == 0 {
			return everyColumn() // a row's every column makes its identity
		}
		return passes(subset...)
	case KindKeyedAggregate:
		a := op.Node.KeyedAggregate
		r.add(a.Keys...)
		addAggregateReads(&r, a.Aggregates)
		return r
	case KindWindowAggregate:
		w := op.Node.WindowAggregate
		r.add(w.Keys...)
		r.add(w.TimeColumn)
		addAggregateReads(&r, w.Aggregates)
		return r
	}
	return everyColumn()
}

func addAggregateReads(r *readColumns, aggs []*Aggregate) {
	for _, a := range aggs {
		r.add(a.Column)
		r.add(a.Args...)
	}
}
