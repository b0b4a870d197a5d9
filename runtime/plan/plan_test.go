package plan

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
)

func chainIDs(g *Graph) []int {
	ids := make([]int, len(g.Operators))
	for i, o := range g.Operators {
		ids[i] = o.ChainID
	}
	return ids
}

func TestChaining(t *testing.T) {
	for _, tc := range []struct {
		name   string
		job    *planpb.JobPlan
		chains []int
	}{
		{"forward pipeline is one chain", job(
			source(1, "src"),
			filterNode(2, "f", from(1), fn("greater", col("x"), lit(3))),
			selectNode(3, "s", fromP(2, PartitionForward), []*planpb.NamedExpr{as("x", col("x"))}),
			sink(4, "out", from(3)),
		), []int{0, 0, 0, 0}},
		{"partitioned edge breaks the chain", job(
			source(1, "src"),
			selectNode(2, "s", fromP(1, PartitionRebalance), []*planpb.NamedExpr{as("x", col("x"))}),
			sink(3, "out", from(2)),
		), []int{0, 1, 1}},
		{"different parallelism breaks the chain", job(
			source(1, "src", par(2)),
			sink(2, "out", from(1)),
		), []int{0, 1}},
		{"a union of two inputs starts a chain", job(
			source(1, "a"),
			source(2, "b"),
			union(3, "u", []*planpb.Input{from(1), from(2)}),
			sink(4, "out", from(3)),
		), []int{0, 1, 2, 2}},
		{"an operator chains with several outputs", job(
			source(1, "src"),
			sink(2, "a", from(1)),
			sink(3, "b", from(1)),
		), []int{0, 0, 0}},
		{"a UDF operator chains to its input, not to its output", job(
			source(1, "src"),
			mapBatches(2, "m", from(1), spec("m", 0, 0, false)),
			sink(3, "out", from(2)),
		), []int{0, 0, 1}},
		{"keyed aggregate reads by key", job(
			source(1, "src"),
			keyedAgg(2, "agg", from(1), []string{"k"}),
			sink(3, "out", from(2)),
		), []int{0, 1, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := mustPlan(t, tc.job, Options{})
			if got := chainIDs(g); !slices.Equal(got, tc.chains) {
				t.Fatalf("chains %v, want %v\n%s", got, tc.chains, g.Explain())
			}
		})
	}
}

func TestExplicitPartitioningKept(t *testing.T) {
	for _, kind := range []Partitioning{
		PartitionForward, PartitionRebalance, PartitionRescale,
		PartitionShuffle, PartitionBroadcast, PartitionGlobal,
		PartitionHash,
	} {
		t.Run(kind.String(), func(t *testing.T) {
			var keys []string
			if kind == PartitionHash {
				keys = []string{"k1", "k2"}
			}
			g := mustPlan(t, job(
				source(1, "src", uid("src")),
				sink(2, "out", fromP(1, kind, keys...), uid("out")),
			), Options{DefaultParallelism: 3})
			e := edge(t, g, "src", "out")
			if e.Partitioning != kind || !slices.Equal(e.Keys, keys) || !e.Explicit || e.ChangedBy != "" {
				t.Fatalf("edge %+v, want %s %v explicit", e, kind, keys)
			}
			chained := g.Operators[0].ChainID == g.Operators[1].ChainID
			if chained != (kind == PartitionForward) {
				t.Fatalf("chained = %v for %s", chained, kind)
			}
			if len(g.Changes) != 0 {
				t.Fatalf("changes %v", g.Changes)
			}
		})
	}
	t.Run("implicit", func(t *testing.T) {
		g := mustPlan(t, job(source(1, "src", uid("src")), sink(2, "out", from(1), uid("out"))), Options{})
		if e := edge(t, g, "src", "out"); e.Partitioning != PartitionForward || e.Explicit {
			t.Fatalf("implicit edge %+v, want FORWARD, not explicit", e)
		}
	})
}

// mismatchJob: a filter at p=2 feeding a select whose UDF has concurrency 4,
// then a sink at the default parallelism 1.
func mismatchJob(config map[string]string, forward Partitioning) *planpb.JobPlan {
	return jobWith(config,
		source(1, "src", uid("src"), par(2)),
		filterNode(2, "filter", from(1), fn("greater", col("x"), lit(0)), uid("flt"), par(2)),
		selectNode(3, "scored", fromP(2, forward), []*planpb.NamedExpr{as("s", call(spec("score", 4, 0, false), col("x")))}, uid("sc")),
		sink(4, "out", from(3), uid("out")),
	)
}

func TestForwardMismatch(t *testing.T) {
	for _, tc := range []struct {
		name   string
		config map[string]string
		opts   Options
		want   Partitioning
		policy string
	}{
		{"default rebalance", nil, Options{}, PartitionRebalance, "rebalance"},
		{"config rescale", map[string]string{ConfigForwardMismatch: "rescale"}, Options{}, PartitionRescale, "rescale"},
		{"config ignores case", map[string]string{ConfigForwardMismatch: " Rescale"}, Options{}, PartitionRescale, "rescale"},
		{"options override config", map[string]string{ConfigForwardMismatch: "fail"}, Options{ForwardMismatch: "rebalance"}, PartitionRebalance, "rebalance"},
	} {
		for _, forward := range []Partitioning{PartitionUnset, PartitionForward} {
			t.Run(fmt.Sprintf("%s/%s", tc.name, forward), func(t *testing.T) {
				g := mustPlan(t, mismatchJob(tc.config, forward), tc.opts)
				if g.ForwardMismatch != tc.policy {
					t.Fatalf("policy %q, want %q", g.ForwardMismatch, tc.policy)
				}
				in := edge(t, g, "flt", "sc/udf-0")
				out := edge(t, g, "sc/udf-0", "out")
				setting := "pipeline.forward-mismatch=" + tc.policy
				for _, e := range []*Edge{in, out} {
					if e.Partitioning != tc.want || e.ChangedBy != setting {
						t.Fatalf("edge %+v, want %s changed by %s", e, tc.want, setting)
					}
				}
				if in.Explicit != (forward == PartitionForward) {
					t.Fatalf("explicit = %v for %s", in.Explicit, forward)
				}
				want := []Change{
					{Edge: slices.Index(g.Edges, in), From: PartitionForward, To: tc.want,
						Reason: `forward edge from "filter" (p=2) to udf "score" (p=4): parallelism differs; ` + setting},
					{Edge: slices.Index(g.Edges, out), From: PartitionForward, To: tc.want,
						Reason: `forward edge from udf "score" (p=4) to "out" (p=1): parallelism differs; ` + setting},
				}
				if !slices.Equal(g.Changes, want) {
					t.Fatalf("changes\n%+v\nwant\n%+v", g.Changes, want)
				}
				if src, flt := op(t, g, "src"), op(t, g, "flt"); src.ChainID != flt.ChainID {
					t.Fatal("source and filter are not chained")
				}
				if udf := op(t, g, "sc/udf-0"); udf.ChainID == op(t, g, "flt").ChainID || udf.ChainID == op(t, g, "out").ChainID {
					t.Fatal("a changed edge is chained")
				}
			})
		}
	}
}

func TestForwardMismatchFail(t *testing.T) {
	for _, tc := range []struct {
		name   string
		config map[string]string
		opts   Options
	}{
		{"config", map[string]string{ConfigForwardMismatch: "fail"}, Options{}},
		{"options", nil, Options{ForwardMismatch: "FAIL"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg := planError(t, mismatchJob(tc.config, PartitionUnset), tc.opts)
			wantContains(t, msg,
				`forward edge from "filter" (uid "flt", p=2) to udf "score" (uid "sc/udf-0", p=4)`,
				`forward edge from udf "score" (uid "sc/udf-0", p=4) to "out" (uid "out", p=1)`,
				"pipeline.forward-mismatch=fail",
				"set pipeline.forward-mismatch to rebalance or rescale",
				"2 problems")
		})
	}
	t.Run("equal parallelism passes", func(t *testing.T) {
		g := mustPlan(t, job(source(1, "src", par(2)), sink(2, "out", from(1), par(2))), Options{ForwardMismatch: "fail"})
		if len(g.Changes) != 0 {
			t.Fatalf("changes %v", g.Changes)
		}
	})
}

func TestParallelism(t *testing.T) {
	g := mustPlan(t, &planpb.JobPlan{DefaultParallelism: 3, Nodes: []*planpb.Node{
		source(1, "a", uid("a")),
		source(2, "b", uid("b"), par(5)),
		union(3, "u", []*planpb.Input{from(1), from(2)}, uid("u")),
		mapBatches(4, "m", from(3), spec("fix", 6, 700, false), uid("m"), par(2)),
		mapBatches(5, "m2", from(4), spec("fix2", 0, 0, false), uid("m2")),
		sink(6, "out", from(5), uid("out")),
	}}, Options{DefaultParallelism: 7})
	for _, tc := range []struct {
		uid       string
		p         int
		from      string
		batchSize int
	}{
		{"a", 3, FromDefault, 0},
		{"b", 5, FromExplicit, 0},
		{"u", 3, FromDefault, 0},
		{"m", 6, FromConcurrency, 700},
		{"m2", 3, FromDefault, DefaultBatchSize},
		{"out", 3, FromDefault, 0},
	} {
		o := op(t, g, tc.uid)
		if o.Parallelism != tc.p || o.ParallelismFrom != tc.from || o.BatchSize != tc.batchSize {
			t.Errorf("%s: p=%d (%s) batch %d, want p=%d (%s) batch %d", tc.uid, o.Parallelism, o.ParallelismFrom, o.BatchSize, tc.p, tc.from, tc.batchSize)
		}
	}
	if g.DefaultParallelism != 3 {
		t.Errorf("default parallelism %d, want the plan's 3", g.DefaultParallelism)
	}
	g = mustPlan(t, job(source(1, "a", uid("a"))), Options{DefaultParallelism: 7})
	if p := op(t, g, "a").Parallelism; p != 7 {
		t.Errorf("p=%d, want Options.DefaultParallelism 7", p)
	}
	g = mustPlan(t, job(source(1, "a", uid("a"))), Options{})
	if p := op(t, g, "a").Parallelism; p != 1 {
		t.Errorf("p=%d, want 1", p)
	}
}

func TestKeyedAggregateInput(t *testing.T) {
	agg := func(in *planpb.Input, keys []string, opts ...nodeOpt) *planpb.JobPlan {
		return job(source(1, "src", uid("src")), keyedAgg(2, "agg", in, keys, append(opts, uid("agg"))...))
	}
	for _, tc := range []struct {
		name     string
		job      *planpb.JobPlan
		want     Partitioning
		keys     []string
		explicit bool
	}{
		{"implicit becomes hash on the group keys", agg(from(1), []string{"k", "j"}), PartitionHash, []string{"k", "j"}, false},
		{"implicit without keys becomes global", agg(from(1), nil), PartitionGlobal, nil, false},
		{"hash on a subset of the keys", agg(fromP(1, PartitionHash, "k"), []string{"k", "j"}), PartitionHash, []string{"k"}, true},
		{"anything at parallelism 1", agg(fromP(1, PartitionRebalance), []string{"k"}, par(1)), PartitionRebalance, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := mustPlan(t, tc.job, Options{DefaultParallelism: 4})
			e := edge(t, g, "src", "agg")
			if e.Partitioning != tc.want || !slices.Equal(e.Keys, tc.keys) || e.Explicit != tc.explicit {
				t.Fatalf("edge %+v, want %s %v explicit=%v", e, tc.want, tc.keys, tc.explicit)
			}
		})
	}
	msg := planError(t, agg(fromP(1, PartitionHash, "other"), []string{"k"}), Options{DefaultParallelism: 4})
	wantContains(t, msg, `node 2 "agg" (uid "agg"): keyed_aggregate with parallelism 4 reads "src" (uid "src") with hash(other) partitioning`, "group keys [k]")
}

func TestUIDs(t *testing.T) {
	score := spec("score", 0, 0, false)
	base := func(extra ...*planpb.Node) *planpb.JobPlan {
		nodes := []*planpb.Node{
			source(1, "src"),
			selectNode(2, "scored", from(1), []*planpb.NamedExpr{as("s", fn("add", call(score, fn("add", col("x"), lit(1))), lit(1)))}),
			filterNode(3, "keep", from(2), call(spec("ok", 0, 0, false), col("s")), uid("keep")),
			sink(4, "out", from(3)),
		}
		nodes = slices.Insert(nodes, 2, extra...)
		return job(nodes...)
	}
	g := mustPlan(t, base(), Options{})
	want := []string{
		"source-1",
		"select-2/pre", "select-2/udf-0", "select-2/post",
		"keep/udf-0", "keep/filter", "keep/drop",
		"sink-4",
	}
	if got := uids(g); !slices.Equal(got, want) {
		t.Fatalf("uids %q, want %q", got, want)
	}
	// An unrelated branch added to the plan leaves the other uids alone.
	g2 := mustPlan(t, base(
		source(10, "side"),
		selectNode(11, "side-scored", from(10), []*planpb.NamedExpr{as("s", call(score, col("x")))}),
		sink(12, "side-out", from(11)),
	), Options{})
	got := uids(g2)
	for _, u := range want {
		if !slices.Contains(got, u) {
			t.Errorf("uid %q is gone after adding a branch: %q", u, got)
		}
	}
	for _, u := range []string{"source-10", "select-11/udf-0", "sink-12"} {
		if !slices.Contains(got, u) {
			t.Errorf("uid %q missing: %q", u, got)
		}
	}
	// A user uid is used as given, and bases the uids of the split.
	g3 := mustPlan(t, job(
		source(1, "src", uid("my-src")),
		selectNode(2, "scored", from(1), []*planpb.NamedExpr{as("s", call(score, col("x")))}, uid("my-scored")),
	), Options{})
	if got := uids(g3); !slices.Equal(got, []string{"my-src", "my-scored/udf-0"}) {
		t.Fatalf("uids %q", got)
	}
}

func TestDuplicateUIDs(t *testing.T) {
	msg := planError(t, job(
		source(1, "a", uid("x")),
		source(2, "b", uid("x")),
		sink(3, "c", from(1), uid("source-4")),
		source(4, "d"),
	), Options{})
	wantContains(t, msg,
		`"a" of node 1 "a" (uid "x") and "b" of node 2 "b" (uid "x") have the same uid "x"`,
		`"c" of node 3 "c" (uid "source-4") and "d" of node 4 "d" (no uid) have the same uid "source-4"`)
}

func TestMaxParallelism(t *testing.T) {
	for _, tc := range []struct {
		name   string
		config map[string]string
		opts   Options
		p      int32
		want   int
	}{
		{"p=1", nil, Options{}, 1, 128},
		{"p=100", nil, Options{}, 100, 256},
		{"p=1000", nil, Options{}, 1000, 2048},
		{"config", map[string]string{ConfigMaxParallelism: "64"}, Options{}, 8, 64},
		{"options override config", map[string]string{ConfigMaxParallelism: "64"}, Options{MaxParallelism: 512}, 8, 512},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := mustPlan(t, jobWith(tc.config, source(1, "a", par(tc.p)), sink(2, "b", from(1))), tc.opts)
			if g.MaxParallelism != tc.want {
				t.Fatalf("max parallelism %d, want %d", g.MaxParallelism, tc.want)
			}
		})
	}
	msg := planError(t, jobWith(map[string]string{ConfigMaxParallelism: "4"}, source(1, "a", par(8), uid("a"))), Options{})
	wantContains(t, msg, `"a" (uid "a") has parallelism 8 (explicit), above the max parallelism 4 (pipeline.max-parallelism)`)
	msg = planError(t, job(source(1, "a", par(1000), uid("a"))), Options{MaxParallelism: 512})
	wantContains(t, msg, "has parallelism 1000 (explicit), above the max parallelism 512 (Options.MaxParallelism)")
}

func TestPlanDoesNotModifyItsInput(t *testing.T) {
	j := mismatchJob(map[string]string{ConfigBatchSize: "123"}, PartitionUnset)
	j.Nodes = append(j.Nodes,
		filterNode(5, "f", from(2), fn("and", call(spec("p", 2, 0, false), fn("add", col("x"), lit(1))), col("y"))),
		keyedAgg(6, "agg", from(5), []string{"k"}),
	)
	before := proto.Clone(j)
	opts := Options{}
	g1 := mustPlan(t, j, opts)
	if !proto.Equal(before, j) {
		t.Fatal("Plan modified the job plan")
	}
	if !reflect.DeepEqual(opts, Options{}) {
		t.Fatal("Plan modified the options")
	}
	g2 := mustPlan(t, j, opts)
	if g1.Explain() != g2.Explain() {
		t.Fatal("planning twice explains differently")
	}
}

// A limit runs at parallelism 1 over a GLOBAL edge, bounds its output and
// ends its source; a collect sink over an endless source is refused.
func TestLimitRule(t *testing.T) {
	endless := func(id int32) *planpb.Node {
		n := source(id, "gen")
		n.Kind = &planpb.Node_Source{Source: &planpb.Source{Kind: &planpb.Source_Datagen{Datagen: &planpb.DatagenSource{}}}}
		return n
	}
	limit := &planpb.Node{Id: 2, Name: "limit", Inputs: []*planpb.Input{from(1)}, Kind: &planpb.Node_Limit{Limit: &planpb.Limit{N: 5}}}
	collect := sink(3, "out", from(2))
	collect.Kind = &planpb.Node_Sink{Sink: &planpb.Sink{Kind: &planpb.Sink_Collect{Collect: &planpb.CollectSink{}}}}
	g, err := PlanWire(jobWith(nil, endless(1), limit, collect), Options{DefaultParallelism: 3})
	if err != nil {
		t.Fatal(err)
	}
	src, lim := g.Operators[0], g.Operators[1]
	if lim.Kind != KindLimit || lim.Parallelism != 1 || lim.ParallelismFrom != FromLimit || !lim.Bounded {
		t.Fatalf("limit: %+v", lim)
	}
	if e := g.Inputs(lim.ID)[0]; e.Partitioning != PartitionGlobal {
		t.Fatalf("limit input %s, want GLOBAL", e.Partitioning)
	}
	if src.EndAfter != 1 || len(lim.Ends) != 1 || lim.Ends[0] != src.ID {
		t.Fatalf("source ends after %d limits; limit ends %v", src.EndAfter, lim.Ends)
	}
	if !strings.Contains(g.Explain(), "passes the first 5 rows") {
		t.Fatalf("explain:\n%s", g.Explain())
	}

	direct := sink(3, "out", from(1))
	direct.Kind = collect.Kind
	if _, err = PlanWire(jobWith(nil, endless(1), direct), Options{DefaultParallelism: 3}); err != nil {
		t.Fatalf("without CollectMustEnd: %v", err)
	}
	_, err = PlanWire(jobWith(nil, endless(1), direct), Options{DefaultParallelism: 3, CollectMustEnd: true})
	if err == nil || !strings.Contains(err.Error(), "collect() would never return") {
		t.Fatalf("got %v", err)
	}
	bad := &planpb.Node{Id: 2, Name: "limit", Inputs: []*planpb.Input{from(1)}, Kind: &planpb.Node_Limit{Limit: &planpb.Limit{N: 0}}}
	if _, err = PlanWire(jobWith(nil, endless(1), bad, collect), Options{}); err == nil || !strings.Contains(err.Error(), "limit n is 0") {
		t.Fatalf("got %v", err)
	}
	limit.Parallelism = 3
	if _, err = PlanWire(jobWith(nil, endless(1), limit, collect), Options{}); err == nil || !strings.Contains(err.Error(), "a limit runs at parallelism 1") {
		t.Fatalf("got %v", err)
	}
}

func intervalJoin(id int32, name string, left, right *planpb.Input, spec *planpb.IntervalJoin, opts ...nodeOpt) *planpb.Node {
	n := node(id, name, []*planpb.Input{left, right}, opts)
	n.Kind = &planpb.Node_IntervalJoin{IntervalJoin: spec}
	return n
}

// An interval join reads each input by that input's keys, and its plan
// node is checked: two inputs, as many left keys as right keys, time
// columns, lower <= upper.
func TestIntervalJoinPlan(t *testing.T) {
	spec := &planpb.IntervalJoin{LeftKeys: []string{"a", "b"}, RightKeys: []string{"x", "y"}, LeftTime: "lt", RightTime: "rt", LowerNs: -5, UpperNs: 5}
	g := mustPlan(t, job(source(1, "l", uid("l")), source(2, "r", uid("r")),
		intervalJoin(3, "join", from(1), from(2), spec, uid("join")), sink(4, "out", from(3))), Options{DefaultParallelism: 3})
	for from, keys := range map[string][]string{"l": {"a", "b"}, "r": {"x", "y"}} {
		e := edge(t, g, from, "join")
		if e.Partitioning != PartitionHash || !slices.Equal(e.Keys, keys) {
			t.Errorf("edge %s → join: %s %v, want hash %v", from, e.Partitioning, e.Keys, keys)
		}
	}
	if ins := g.Inputs(op(t, g, "join").ID); len(ins) != 2 || g.Operators[ins[0].From].UID != "l" || g.Operators[ins[1].From].UID != "r" {
		t.Fatalf("the join's inputs are not left then right: %+v", ins)
	}
	bad := &planpb.IntervalJoin{LeftKeys: []string{"a"}, RightKeys: []string{"x", "y"}, LeftTime: "", RightTime: "rt", LowerNs: 5, UpperNs: -5, How: 9}
	msg := planError(t, job(source(1, "l"), source(2, "r"), intervalJoin(3, "join", from(1), from(2), bad), sink(4, "out", from(3))), Options{})
	wantContains(t, msg, "interval_join needs as many left keys as right keys, at least one; it has [a] and [x y]",
		"interval_join left time column is empty", "lower bound 5ns is above the upper bound -5ns", "unknown join type 9")
	one := &planpb.Node{Id: 2, Name: "one", Inputs: []*planpb.Input{from(1)}, Kind: &planpb.Node_IntervalJoin{IntervalJoin: spec}}
	wantContains(t, planError(t, job(source(1, "l"), one), Options{}), "an interval_join needs two inputs (left, right), it has 1")
}
