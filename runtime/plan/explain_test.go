package plan

import (
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
)

func TestExplainGolden(t *testing.T) {
	j := &planpb.JobPlan{Name: "demo", Nodes: []*planpb.Node{
		source(1, "src", uid("src"), par(2)),
		filterNode(2, "filter", from(1), fn("greater", col("x"), lit(0)), par(2)),
		selectNode(3, "scored", from(2), []*planpb.NamedExpr{
			as("x", col("x")),
			as("s", fn("multiply", call(spec("score", 4, 500, false), fn("add", col("x"), lit(1))), lit(2))),
		}, uid("sc"), par(2)),
		sink(4, "out", fromP(3, PartitionHash, "x"), uid("out")),
	}}
	const golden = `job "demo": 6 operators in 4 chains; default parallelism 1, max parallelism 128, pipeline.forward-mismatch=rebalance
max parallelism 128 from the default for the highest parallelism 4: 1.5x rounded up to a power of two, within [128, 32768]; set pipeline.max-parallelism before the first savepoint to rescale beyond it later
#0 source "src" uid=src p=2 (explicit) chain=0
#1 filter "filter" uid=filter-2 p=2 (explicit) chain=0
    input #0: forward
#2 select "scored/pre" uid=sc/pre p=2 (explicit) chain=0
    input #1: forward
    computes x, __flinkgo_tmp_0 = add(x, 1)
#3 udf "score" uid=sc/udf-0 p=4 (udf concurrency) chain=1
    input #2: rebalance (was forward; pipeline.forward-mismatch=rebalance)
    calls (batch size 500): score(__flinkgo_tmp_0) [concurrency=4, batch_size=500] -> __flinkgo_tmp_1
    worker reads __flinkgo_tmp_0, returns __flinkgo_tmp_1; emits x, __flinkgo_tmp_1
#4 select "scored/post" uid=sc/post p=2 (explicit) chain=2
    input #3: rebalance (was forward; pipeline.forward-mismatch=rebalance)
    computes x, s = multiply(__flinkgo_tmp_1, 2)
#5 sink "out" uid=out p=1 (default) chain=3
    input #4: hash(x)
forward edges changed by pipeline.forward-mismatch:
    #2 -> #3 forward -> rebalance: forward edge from "scored/pre" (p=2) to udf "score" (p=4): parallelism differs; pipeline.forward-mismatch=rebalance
    #3 -> #4 forward -> rebalance: forward edge from udf "score" (p=4) to "scored/post" (p=2): parallelism differs; pipeline.forward-mismatch=rebalance
`
	g := mustPlan(t, j, Options{})
	if got := g.Explain(); got != golden {
		t.Fatalf("Explain:\n%s\nwant:\n%s", got, golden)
	}
}

func TestExplainWithoutChanges(t *testing.T) {
	g := mustPlan(t, job(
		source(1, "src"),
		filterNode(2, "keep", from(1), call(spec("ok", 0, 0, true), col("x")), uid("k")),
		mapBatches(3, "fix", from(2), spec("fix", 0, 64, false)),
	), Options{ForwardMismatch: "rescale"})
	wantContains(t, g.Explain(),
		"pipeline.forward-mismatch=rescale\n",
		`#1 udf "ok" uid=k/udf-0 p=1 (default) chain=0`,
		"calls (batch size 10000): ok(x) [async] -> __flinkgo_tmp_0",
		"emits input columns, then __flinkgo_tmp_0",
		"keeps rows where __flinkgo_tmp_0",
		"computes input columns except __flinkgo_tmp_0",
		"function fix [batch_size=64] (batch size 64)",
		"forward edges changed by pipeline.forward-mismatch: none\n",
	)
	// The UDF operator's output starts a new chain.
	if strings.Count(g.Explain(), "chain=0") != 2 || strings.Count(g.Explain(), "chain=1") != 3 {
		t.Fatalf("want source and udf in chain 0, the rest in chain 1:\n%s", g.Explain())
	}
}

// The planner resolves a keyed aggregation's AUTO emit mode from the
// boundedness its sources declare, and Explain shows it.
func TestExplainKeyedAggregationEmitMode(t *testing.T) {
	unbounded := source(1, "ticks")
	unbounded.GetSource().GetDatagen().Rows = 0
	for _, tc := range []struct {
		name    string
		src     *planpb.Node
		emit    planpb.KeyedAggregate_Emit
		updates bool
		line    string
	}{
		{"bounded auto", source(1, "src"), planpb.KeyedAggregate_EMIT_AUTO, false,
			"    emits final: one row per key when its input ends (auto, input bounded)\n"},
		{"unbounded auto", unbounded, planpb.KeyedAggregate_EMIT_AUTO, true,
			"    emits updates: the keys that changed, every pipeline.keyed-aggregate.update-interval (auto, input unbounded)\n"},
		{"unbounded final", unbounded, planpb.KeyedAggregate_EMIT_FINAL, false,
			"    emits final: one row per key when its input ends (as the plan asks)\n"},
		{"bounded updates", source(1, "src"), planpb.KeyedAggregate_EMIT_UPDATES, true,
			"    emits updates: the keys that changed, every pipeline.keyed-aggregate.update-interval (as the plan asks)\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			agg := keyedAgg(2, "counts", fromP(1, PartitionHash, "x"), []string{"x"})
			agg.GetKeyedAggregate().Emit = tc.emit
			g := mustPlan(t, job(tc.src, agg, sink(3, "out", from(2))), Options{})
			op := g.Operators[1]
			if bounded := tc.src != unbounded; op.EmitUpdates != tc.updates || op.Bounded != bounded {
				t.Errorf("emit updates %v, bounded %v; want %v, %v", op.EmitUpdates, op.Bounded, tc.updates, bounded)
			}
			wantContains(t, g.Explain(), tc.line)
		})
	}
}

// schemaOf derives every output as one int64 column named after the
// operator, failing for the operator named "bad".
type schemaOf struct{}

func (schemaOf) Schema(op *Operator, in []*arrow.Schema) (*arrow.Schema, error) {
	if op.Name == "bad" {
		return nil, errors.New("no such column")
	}
	return arrow.NewSchema([]arrow.Field{{Name: op.Name, Type: arrow.PrimitiveTypes.Int64}}, nil), nil
}

// Planned with a schema deriver (the runtime's operator registry), every
// operator has its output schema, Explain shows it, and a schema that
// cannot be derived fails the planning, naming the operator.
func TestExplainShowsDerivedSchemas(t *testing.T) {
	g := mustPlan(t, job(source(1, "src"), sink(2, "out", from(1))), Options{Schemas: schemaOf{}})
	wantContains(t, g.Explain(), "    output: src int64\n", "    output: out int64\n")
	if g.Operators[1].Schema.Field(0).Name != "out" {
		t.Fatalf("sink schema %s", g.Operators[1].Schema)
	}
	_, err := PlanWire(job(source(1, "src"), sink(2, "bad", from(1))), Options{Schemas: schemaOf{}})
	if !errors.Is(err, ErrInvalidPlan) || !strings.Contains(err.Error(), `"bad"`) || !strings.Contains(err.Error(), "output schema: no such column") {
		t.Fatalf("got %v", err)
	}
}

// Explain says where the max parallelism came from, so a user planning to
// rescale later sees whether it was chosen or defaulted.
func TestExplainSaysWhyMaxParallelism(t *testing.T) {
	configured := job(source(1, "src"))
	configured.Config = map[string]string{ConfigMaxParallelism: "256"}
	wantContains(t, mustPlan(t, configured, Options{}).Explain(),
		"max parallelism 256 from pipeline.max-parallelism\n")
	wantContains(t, mustPlan(t, job(source(1, "src")), Options{MaxParallelism: 64}).Explain(),
		"max parallelism 64 from Options.MaxParallelism\n")
	wantContains(t, mustPlan(t, job(source(1, "src")), Options{RestoredMaxParallelism: 512}).Explain(),
		"max parallelism 512 from the state the job restores\n")
	wantContains(t, mustPlan(t, job(source(1, "src", par(300))), Options{}).Explain(),
		"max parallelism 512 from the default for the highest parallelism 300:")
}
