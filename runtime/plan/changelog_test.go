package plan

import (
	"testing"

	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
	"github.com/flinkgo/flinkgo/runtime/rowkind"
)

func updatesAgg(id int32, name string, in int32, keys ...string) *planpb.Node {
	agg := keyedAgg(id, name, fromP(in, PartitionHash, keys...), keys, uid(name))
	agg.GetKeyedAggregate().Emit = planpb.KeyedAggregate_EMIT_UPDATES
	return agg
}

func fileSink(id int32, name string, in int32, changelog bool) *planpb.Node {
	n := node(id, name, []*planpb.Input{from(in)}, []nodeOpt{uid(name)})
	n.Kind = &planpb.Node_Sink{Sink: &planpb.Sink{Kind: &planpb.Sink_File{File: &planpb.FileSink{Path: "/tmp/x", Changelog: changelog}}}}
	return n
}

// An updating aggregation makes a retract stream that selects and sinks
// keep and a second aggregation consumes; a final one stays append-only;
// explain shows each operator's kind and who made it.
func TestChangelogModes(t *testing.T) {
	final := keyedAgg(5, "final", fromP(4, PartitionHash, "n"), []string{"n"}, uid("final"))
	g := mustPlan(t, job(
		source(1, "src", uid("src")),
		updatesAgg(2, "counts", 1, "x"),
		selectNode(3, "twice", from(2), []*planpb.NamedExpr{as("n", col("n"))}, uid("twice")),
		updatesAgg(4, "buckets", 3, "n"),
		final,
		sink(6, "out", from(5), uid("out")),
	), Options{})
	for _, tc := range []struct {
		uid  string
		mode rowkind.Mode
		from string
	}{
		{"src", rowkind.AppendOnly, ""}, {"counts", rowkind.Retract, "counts"}, {"twice", rowkind.Retract, "counts"},
		{"buckets", rowkind.Retract, "buckets"}, {"final", rowkind.AppendOnly, ""}, {"out", rowkind.AppendOnly, ""},
	} {
		o := op(t, g, tc.uid)
		if o.Changelog != tc.mode || (tc.from != "" && g.Operators[o.ChangelogFrom].UID != tc.from) {
			t.Errorf("%s: %s from #%d, want %s from %s", tc.uid, o.Changelog, o.ChangelogFrom, tc.mode, tc.from)
		}
	}
	wantContains(t, g.Explain(),
		"    changelog: retract (+I -U +U -D)\n",
		"    changelog: retract, made by #1 counts\n")
}

// A file sink writing changelogs that reads an updating aggregation
// directly makes it an upsert stream (no -U); anything else a file sink
// refuses, naming the operator that makes the changelog.
func TestFileSinksAndChangelogs(t *testing.T) {
	g := mustPlan(t, job(source(1, "src"), updatesAgg(2, "counts", 1, "x"), fileSink(3, "files", 2, true)), Options{})
	if o := op(t, g, "counts"); o.Changelog != rowkind.Upsert || len(o.UpsertKey) != 1 || o.UpsertKey[0] != "x" {
		t.Errorf("counts: %s by %v, want upsert by [x]", o.Changelog, o.UpsertKey)
	}
	wantContains(t, g.Explain(), "    changelog: upsert(x) (+I +U -D)\n")

	// Through a select that keeps the key: still an upsert stream.
	g = mustPlan(t, job(source(1, "src"), updatesAgg(2, "counts", 1, "x"),
		selectNode(3, "sel", from(2), []*planpb.NamedExpr{as("x", col("x")), as("n2", fn("multiply", col("n"), lit(2)))}),
		fileSink(4, "files", 3, true)), Options{})
	if o := op(t, g, "counts"); o.Changelog != rowkind.Upsert {
		t.Errorf("counts read through a select keeping x: %s, want upsert", o.Changelog)
	}
	// A select that drops the key, or a filter, keeps it a retract stream,
	// which the sink refuses, naming the aggregation.
	msg := planError(t, job(source(1, "src"), updatesAgg(2, "counts", 1, "x"),
		selectNode(3, "sel", from(2), []*planpb.NamedExpr{as("n", col("n"))}), fileSink(4, "files", 3, true)), Options{})
	wantContains(t, msg, `file sink "files" (uid "files") cannot write the retract stream made by "counts" (uid "counts") as an upsert changelog`,
		`select "sel" (uid "select-3") does not keep the group key "x"`, `keep "x" in the select`)
	msg = planError(t, job(source(1, "src"), updatesAgg(2, "counts", 1, "x"),
		filterNode(3, "big", from(2), fn("greater", col("n"), lit(2))), fileSink(4, "files", 3, true)), Options{})
	wantContains(t, msg, `cannot write the retract stream made by "counts"`, `"big" (uid "filter-3") (filter) comes between`, "apply it before the aggregation")

	msg = planError(t, job(source(1, "src"), updatesAgg(2, "counts", 1, "x"), fileSink(3, "files", 2, false)), Options{})
	wantContains(t, msg, `cannot write the retract stream made by "counts"`)
}

// The changelog mode is derived per output: an aggregation that a
// changelog file sink and a second aggregation both read stays a retract
// stream (the second aggregation needs the -U rows), and the sink drops
// the -U rows itself, writing the upsert stream by the aggregation's keys.
func TestChangelogSinkBesideASecondAggregation(t *testing.T) {
	for _, between := range []bool{false, true} {
		nodes := []*planpb.Node{source(1, "src"), updatesAgg(2, "counts", 1, "x")}
		sinkIn := int32(2)
		if between { // through a select that keeps the key
			nodes = append(nodes, selectNode(5, "sel", from(2), []*planpb.NamedExpr{as("x", col("x")), as("n", col("n"))}, uid("sel")))
			sinkIn = 5
		}
		nodes = append(nodes, fileSink(3, "files", sinkIn, true), updatesAgg(4, "buckets", 2, "n"), sink(6, "out", from(4), uid("out")))
		g := mustPlan(t, job(nodes...), Options{})
		if o := op(t, g, "counts"); o.Changelog != rowkind.Retract {
			t.Errorf("between=%v: counts: %s, want retract (buckets reads it too)", between, o.Changelog)
		}
		if o := op(t, g, "buckets"); o.Changelog != rowkind.Retract {
			t.Errorf("between=%v: buckets: %s, want retract", between, o.Changelog)
		}
		files := op(t, g, "files")
		if files.Changelog != rowkind.Upsert || !files.DropUpdateBefore || len(files.UpsertKey) != 1 || files.UpsertKey[0] != "x" {
			t.Errorf("between=%v: files: %s by %v (drops -U: %v), want upsert by [x] dropping -U",
				between, files.Changelog, files.UpsertKey, files.DropUpdateBefore)
		}
	}
}

// A Kafka sink refuses any changelog (records cannot be taken back), naming
// the operator that made it; an append-only input plans.
func TestKafkaSinkRefusesChangelogs(t *testing.T) {
	kafkaSink := func(id int32, in int32) *planpb.Node {
		n := node(id, "topic", []*planpb.Input{from(in)}, []nodeOpt{uid("topic")})
		n.Kind = &planpb.Node_Sink{Sink: &planpb.Sink{Kind: &planpb.Sink_Kafka{Kafka: &planpb.KafkaSink{Topic: "out"}}}}
		return n
	}
	msg := planError(t, job(source(1, "src"), updatesAgg(2, "counts", 1, "x"), kafkaSink(3, 2)), Options{})
	wantContains(t, msg, `Kafka sink "topic" (uid "topic") cannot write the retract stream made by "counts" (uid "counts")`, `emit="final"`)
	mustPlan(t, job(source(1, "src"), kafkaSink(2, 1)), Options{})
}

// Operators that do not take rows back refuse a changelog input; so does
// map_batches unless its function handles row kinds.
func TestChangelogInputsRefused(t *testing.T) {
	limit := node(3, "first", []*planpb.Input{from(2)}, nil)
	limit.Kind = &planpb.Node_Limit{Limit: &planpb.Limit{N: 5}}
	msg := planError(t, job(source(1, "src"), updatesAgg(2, "counts", 1, "x"), limit, sink(4, "out", from(3))), Options{})
	wantContains(t, msg, `"first" (uid "limit-3") (limit) does not take changelog streams: its input is a retract stream made by "counts"`)

	mb := mapBatches(3, "fix", from(2), spec("fix", 0, 0, false))
	msg = planError(t, job(source(1, "src"), updatesAgg(2, "counts", 1, "x"), mb, sink(4, "out", from(3))), Options{})
	wantContains(t, msg, "a map_batches function does not see")
	mb.GetMapBatches().HandlesRowKinds = true
	g := mustPlan(t, job(source(1, "src"), updatesAgg(2, "counts", 1, "x"), mb, sink(4, "out", from(3))), Options{})
	if o := g.Operators[2]; o.Changelog != rowkind.Retract {
		t.Errorf("map_batches handling row kinds: %s, want retract", o.Changelog)
	}
}
