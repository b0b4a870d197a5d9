package plan

import (
	"fmt"
	"slices"

	"github.com/flinkgo/flinkgo/runtime/connector"
	"github.com/flinkgo/flinkgo/runtime/rowkind"
)

// resolveChangelogs derives the kind of every operator's output stream
// (docs/semantics.md#changelogs), as Flink's changelog-mode inference: a
// source is append-only; a keyed aggregation that emits updates makes a
// retract stream (+I, -U/+U pairs, -D), or an upsert stream keyed by its
// group keys when its only readers are file sinks writing changelogs,
// directly or through selects that keep the keys (Flink drops -U for sinks
// that accept upserts); filter, select, UDFs, watermark
// assigners, unions and sinks keep their input's kind. The mode is derived
// per output: when another operator reads the aggregation too (a second
// aggregation, say), it stays a retract stream and each such sink drops
// the -U rows itself (Operator.DropUpdateBefore). Operators that do
// not take rows back refuse changelog inputs, and file sinks refuse what
// they cannot write, naming the operator that makes the stream.
func (b *builder) resolveChangelogs() {
	// upsertReaders[agg] are the changelog file sinks that read agg by its
	// keys; retractReaders[agg] says another operator reads it.
	upsertReaders := map[int][]int{}
	for _, op := range b.g.Operators {
		if op.Kind != KindSink || !b.wantsUpsert(op) || len(b.g.Inputs(op.ID)) != 1 {
			continue
		}
		if agg := b.upsertSource(b.g.Inputs(op.ID)[0].From); agg != nil {
			upsertReaders[agg.ID] = append(upsertReaders[agg.ID], op.ID)
		}
	}
	upsert := map[int]bool{}      // aggregations that emit an upsert stream
	dropsUB := map[int][]string{} // sinks that make one of a retract stream, with its keys
	for agg, sinks := range upsertReaders {
		if b.onlyReaders(agg, sinks) {
			upsert[agg] = true
			continue
		}
		for _, s := range sinks {
			dropsUB[s] = b.g.Operators[agg].Node.KeyedAggregate.Keys
		}
	}
	for _, op := range b.g.Operators { // topological order
		in, from := rowkind.AppendOnly, (*Operator)(nil)
		for _, e := range b.g.Inputs(op.ID) {
			up := b.g.Operators[e.From]
			if up.Changelog > in {
				in, from = up.Changelog, b.g.Operators[up.ChangelogFrom]
			}
		}
		op.Changelog, op.ChangelogFrom = in, -1
		if from != nil {
			op.ChangelogFrom, op.UpsertKey = from.ID, from.UpsertKey
		}
		switch op.Kind {
		case KindSource:
		case KindKeyedAggregate:
			if in.IsChangelog() && hasUDAF(op.Node.KeyedAggregate.Aggregates) {
				b.problem("%s has pandas UDAFs, which cannot take rows back: its input is a %s stream made by %s (-U, -D); "+
					"aggregate that input with emit=\"final\" over a bounded input (append-only), or use built-in aggregates",
					opLabel(op), in, opLabel(from))
			}
			// Retractions are consumed here: the output is the aggregate's own.
			op.Changelog, op.ChangelogFrom, op.UpsertKey = rowkind.AppendOnly, -1, nil
			if op.EmitUpdates {
				op.Changelog, op.ChangelogFrom = rowkind.Retract, op.ID
				if upsert[op.ID] {
					op.Changelog, op.UpsertKey = rowkind.Upsert, op.Node.KeyedAggregate.Keys
				}
			}
		case KindJoin:
			// A regular join takes back what a retraction of either input
			// joined (Flink's StreamingJoinOperator); it emits a retract
			// stream when it is outer (padded rows are retracted) or an
			// input is a changelog.
			op.Changelog, op.ChangelogFrom, op.UpsertKey = rowkind.AppendOnly, -1, nil
			if in.IsChangelog() || op.Node.Join.How != InnerJoin {
				op.Changelog, op.ChangelogFrom = rowkind.Retract, op.ID
			}
		case KindSelect, KindFilter, KindUDF, KindWatermarkAssigner, KindUnion:
		case KindMapBatches:
			if in.IsChangelog() && !op.Node.MapBatches.HandlesRowKinds {
				b.problem("%s reads a %s stream made by %s, whose rows carry row kinds (+I, -U, +U, -D) that a map_batches function does not see: "+
					"compute with select/with_column/filter (they keep each row's kind), or apply map_batches before the aggregation",
					opLabel(op), in, opLabel(from))
			}
		case KindSink:
			if keys, ok := dropsUB[op.ID]; ok && in == rowkind.Retract {
				op.Changelog, op.UpsertKey, op.DropUpdateBefore = rowkind.Upsert, keys, true
				in = rowkind.Upsert
			}
			b.checkSinkChangelog(op, in, from)
		default:
			if in.IsChangelog() {
				b.problem("%s (%s) does not take changelog streams: its input is a %s stream made by %s, which takes rows back (-U, -D); "+
					"apply it before the aggregation, or aggregate with emit=\"final\" over a bounded input (append-only)",
					opLabel(op), op.Kind, in, opLabel(from))
			}
		}
	}
}

// upsertSource returns the updating keyed aggregation whose output reaches
// operator id unchanged by key, else nil: the aggregation itself, or through
// selects (without UDFs) that keep each group key as a column of its own
// name. A filter would not do: a key whose new row it drops would keep its
// old one in an upsert table.
func (b *builder) upsertSource(id int) *Operator {
	var keep []*Operator
	for {
		op := b.g.Operators[id]
		switch op.Kind {
		case KindKeyedAggregate:
			if !op.EmitUpdates {
				return nil
			}
			for _, sel := range keep {
				for _, k := range op.Node.KeyedAggregate.Keys {
					if !keepsColumn(sel, k) {
						return nil
					}
				}
			}
			return op
		case KindSelect:
			keep = append(keep, op)
			id = b.g.Inputs(id)[0].From
		default:
			return nil
		}
	}
}

// onlyReaders reports whether the sinks are all that reads aggregation agg:
// every operator downstream of agg, up to the sinks, is one of the selects
// between them.
func (b *builder) onlyReaders(agg int, sinks []int) bool {
	todo := []int{agg}
	for len(todo) > 0 {
		id := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		for _, e := range b.g.Outputs(id) {
			to := b.g.Operators[e.To]
			switch {
			case slices.Contains(sinks, to.ID):
			case to.Kind == KindSelect:
				todo = append(todo, to.ID)
			default:
				return false
			}
		}
	}
	return true
}

// keepsColumn reports whether a select passes column name through as is.
func keepsColumn(sel *Operator, name string) bool {
	if sel.KeepInput {
		return !slices.Contains(sel.DropColumns, name)
	}
	for _, c := range sel.Node.Select.Columns {
		if c.Name == name && ColumnName(c.Expr) == name {
			return true
		}
	}
	return false
}

// wantsUpsert reports whether sink op writes upsert streams but not
// retract ones (a changelog file sink): an aggregation it reads by its
// keys makes an upsert stream for it.
func (b *builder) wantsUpsert(op *Operator) bool {
	snk := b.sinkOf(op)
	if snk == nil {
		return false
	}
	c := snk.Changelog()
	return c.Upsert && !c.Retract
}

// checkSinkChangelog refuses what a sink cannot write, as its connector
// says (connector.Sink.Changelog, CheckChangelog): a Kafka sink any
// changelog, a file sink a retract stream (as Flink's filesystem sink) and
// an upsert stream unless it writes changelogs (a row_kind column).
func (b *builder) checkSinkChangelog(op *Operator, in rowkind.Mode, from *Operator) {
	if !in.IsChangelog() {
		return
	}
	snk := b.sinkOf(op)
	if snk == nil {
		return
	}
	if c := snk.Changelog(); (in == rowkind.Retract && c.Retract) || (in == rowkind.Upsert && c.Upsert) {
		return
	}
	err := snk.CheckChangelog(connector.ChangelogInput{
		Mode: in, Sink: opLabel(op), From: opLabel(from), Described: rowkind.Describe(in, op.UpsertKey),
		NotUpsertable: func() string { return b.notUpsertable(op, from) },
	})
	if err != nil {
		b.problem("%s", err)
	}
}

// notUpsertable says why the retract stream from reaching sink is not an
// upsert stream by from's keys, and what to do.
func (b *builder) notUpsertable(sink, from *Operator) string {
	if from.Kind != KindKeyedAggregate {
		return fmt.Sprintf("its rows have no key to update by (a %s's changelog takes back whole rows); "+
			"collect()/print() it, or write the inputs of %s with changelog=True instead", from.Kind, describe(from))
	}
	keys := from.Node.KeyedAggregate.Keys
	for id := b.g.Inputs(sink.ID)[0].From; id != from.ID; id = b.g.Inputs(id)[0].From {
		op := b.g.Operators[id]
		if op.Kind != KindSelect {
			return fmt.Sprintf("%s (%s) comes between, and an upsert table keeps a key's old row when its new one is dropped or changed there; "+
				"apply it before the aggregation, or filter the written changelog when reading it", opLabel(op), op.Kind)
		}
		for _, k := range keys {
			if !keepsColumn(op, k) {
				return fmt.Sprintf("select %s does not keep the group key %q as a column of that name, and the upsert changelog is keyed by it; "+
					"keep %q in the select", opLabel(op), k, k)
			}
		}
	}
	return "its rows do not reach the sink by the aggregation's keys"
}

// changelogLine is what explain() says of a changelog operator's output.
func (g *Graph) changelogLine(op *Operator) string {
	if !op.Changelog.IsChangelog() {
		return ""
	}
	what := rowkind.Describe(op.Changelog, op.UpsertKey)
	if op.ChangelogFrom == op.ID {
		return fmt.Sprintf("    changelog: %s (%s)\n", what, kindsOf(op.Changelog))
	}
	if op.DropUpdateBefore {
		return fmt.Sprintf("    changelog: %s, of the retract stream made by #%d %s without its -U rows\n", what, op.ChangelogFrom, g.Operators[op.ChangelogFrom].Name)
	}
	return fmt.Sprintf("    changelog: %s, made by #%d %s\n", what, op.ChangelogFrom, g.Operators[op.ChangelogFrom].Name)
}

func kindsOf(m rowkind.Mode) string {
	s := ""
	for i, k := range m.Kinds() {
		if i > 0 {
			s += " "
		}
		s += k.String()
	}
	return s
}
