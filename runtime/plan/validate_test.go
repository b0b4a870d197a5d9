package plan

import (
	"strings"
	"testing"

	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
)

func TestValidationErrors(t *testing.T) {
	okSelect := []*planpb.NamedExpr{as("x", col("x"))}
	for _, tc := range []struct {
		name string
		job  *planpb.JobPlan
		opts Options
		want []string
	}{
		{"nil plan", nil, Options{}, []string{"the job plan is nil"}},
		{"empty plan", job(), Options{}, []string{"the plan has no nodes"}},
		{"unknown input node", job(source(1, "src"), sink(2, "out", from(9), uid("o"))), Options{},
			[]string{`node 2 "out" (uid "o"): input node 9 is unknown`}},
		{"cycle", job(source(1, "src"), selectNode(2, "loop", from(2), okSelect)), Options{},
			[]string{`node 2 "loop" (no uid): reads its own output (a cycle)`}},
		{"out-of-order input", job(source(1, "src"), sink(2, "out", from(3)), selectNode(3, "later", from(1), okSelect)), Options{},
			[]string{`node 2 "out" (no uid): input node 3 "later" is listed after it: the plan must list nodes in topological order`}},
		{"no kind", job(source(1, "src"), &planpb.Node{Id: 2, Name: "what", Uid: "w", Inputs: []*planpb.Input{from(1)}}), Options{},
			[]string{`node 2 "what" (uid "w"): has no kind`}},
		{"duplicate id", job(source(1, "a"), source(1, "b")), Options{},
			[]string{`node 1 "b" (no uid): id 1 is also the id of node #0 of the plan "a"`}},
		{"hash without keys", job(source(1, "src"), sink(2, "out", fromP(1, PartitionHash))), Options{},
			[]string{`node 2 "out" (no uid): input from node 1: HASH partitioning needs key columns`}},
		{"keys without hash", job(source(1, "src"), sink(2, "out", fromP(1, PartitionRebalance, "k"))), Options{},
			[]string{"key columns [k] are only allowed with HASH partitioning, not REBALANCE"}},
		{"unknown partitioning", job(source(1, "src"), sink(2, "out", fromP(1, 42))), Options{},
			[]string{"input from node 1 has unknown partitioning 42"}},
		{"sink with outputs", job(source(1, "src"), sink(2, "out", from(1), uid("snk")), selectNode(3, "after", from(2), okSelect)), Options{},
			[]string{`node 3 "after" (no uid): reads the output of sink node 2 "out" (uid "snk"): a sink has no outputs`}},
		{"input counts", job(
			source(1, "src"),
			&planpb.Node{Id: 2, Name: "s2", Inputs: []*planpb.Input{from(1)}, Kind: &planpb.Node_Source{Source: &planpb.Source{Kind: &planpb.Source_Datagen{Datagen: &planpb.DatagenSource{}}}}},
			&planpb.Node{Id: 3, Name: "two", Inputs: []*planpb.Input{from(1), from(2)}, Kind: &planpb.Node_Select{Select: &planpb.Select{Columns: okSelect}}},
			union(4, "u", nil),
		), Options{}, []string{
			`node 2 "s2" (no uid): a source has no inputs, it has 1`,
			`node 3 "two" (no uid): a select needs exactly one input, it has 2`,
			`node 4 "u" (no uid): a union needs at least one input`,
		}},
		{"negative parallelism", job(source(1, "src", par(-1), uid("s"))), Options{},
			[]string{`node 1 "src" (uid "s"): parallelism is -1, must not be negative`}},
		{"unknown forward-mismatch config", jobWith(map[string]string{ConfigForwardMismatch: "shuffle"}, source(1, "src")), Options{},
			[]string{`config pipeline.forward-mismatch="shuffle" is unknown, allowed: rebalance, rescale, fail`}},
		{"bad options", &planpb.JobPlan{DefaultParallelism: -3, Nodes: []*planpb.Node{source(1, "src")}},
			Options{DefaultParallelism: -1, MaxParallelism: -2, ForwardMismatch: "sometimes"}, []string{
				"4 problems",
				"default_parallelism is -3",
				"Options.DefaultParallelism is -1",
				"Options.MaxParallelism is -2, must be between 1 and 32768",
				`Options.ForwardMismatch is "sometimes", allowed: rebalance, rescale, fail`,
			}},
		{"bad config numbers", jobWith(map[string]string{ConfigBatchSize: "0", ConfigMaxParallelism: "lots"}, source(1, "src")), Options{},
			[]string{
				`config python.fn-execution.arrow.batch.size="0": must be an integer between 1 and 4194304`,
				`config pipeline.max-parallelism="lots": must be an integer between 1 and 32768`,
			}},
		{"expressions", job(
			source(1, "src"),
			selectNode(2, "sel", from(1), []*planpb.NamedExpr{
				as("a", &planpb.Expr{}),
				as("a", col("__flinkgo_tmp_0")),
				as("c", call(nil, col("x"))),
				as("d", call(spec("neg", -1, -2, false), col("x"))),
			}),
			filterNode(3, "flt", from(2), nil),
			selectNode(4, "none", from(3), nil),
		), Options{}, []string{
			`node 2 "sel" (no uid): select column "a": an expression is empty`,
			`the select has two columns named "a"`,
			`select column "a": column "__flinkgo_tmp_0" starts with "__flinkgo_", which is reserved`,
			`select column "c": a UDF call has no UDF spec`,
			`udf "neg": concurrency is -1`,
			`udf "neg": batch_size is -2`,
			`node 3 "flt" (no uid): the filter's predicate: an expression is empty`,
			`node 4 "none" (no uid): the select has no columns`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg := planError(t, tc.job, tc.opts)
			if !strings.HasPrefix(msg, "plan: invalid job plan") {
				t.Errorf("message %q does not start with the package's error", msg)
			}
			wantContains(t, msg, tc.want...)
		})
	}
}

func TestRestoredMaxParallelism(t *testing.T) {
	j := job(source(1, "src", par(4)), sink(2, "out", from(1), par(4)))
	if g := mustPlan(t, j, Options{RestoredMaxParallelism: 256}); g.MaxParallelism != 256 {
		t.Errorf("max parallelism %d, want the restored 256", g.MaxParallelism)
	}
	msg := planError(t, j, Options{RestoredMaxParallelism: 2})
	wantContains(t, msg, "src", "parallelism 4", "max parallelism 2 of the state the job restores", "at most 2")
	// An explicit setting wins (exec then refuses a different one).
	if g := mustPlan(t, jobWith(map[string]string{ConfigMaxParallelism: "64"}, source(1, "src"), sink(2, "out", from(1))), Options{RestoredMaxParallelism: 256}); g.MaxParallelism != 64 {
		t.Errorf("max parallelism %d, want the configured 64", g.MaxParallelism)
	}
}

// A plan cannot make the runtime build more goroutines, processes or
// buffers than the limits allow (docs/semantics.md#limits); each error
// names the limit.
func TestPlanLimits(t *testing.T) {
	wide := job(source(1, "src", par(1000)))
	for i := int32(2); i <= 20; i++ {
		wide.Nodes = append(wide.Nodes, sink(i, "out", from(1), par(1000)))
	}
	for _, tc := range []struct {
		name string
		job  *planpb.JobPlan
		want []string
	}{
		{"node parallelism", job(source(1, "src", par(1_000_000_000), uid("s"))),
			[]string{`node 1 "src" (uid "s"): parallelism is 1000000000, above the runtime's limit of 1024 (plan.ParallelismLimit)`}},
		{"default parallelism", &planpb.JobPlan{DefaultParallelism: 1 << 30, Nodes: []*planpb.Node{source(1, "src")}},
			[]string{"default_parallelism is 1073741824, above the runtime's limit of 1024 (plan.ParallelismLimit)"}},
		{"udf concurrency and batch size", job(source(1, "src"), mapBatches(2, "m", from(1), spec("big", 1<<20, 1<<30, false))),
			[]string{`"big": concurrency is 1048576, above the runtime's limit of 1024`, `"big": batch_size is 1073741824, above the runtime's limit of 4194304 (plan.BatchSizeLimit)`}},
		{"batch size config", jobWith(map[string]string{ConfigBatchSize: "2000000000"}, source(1, "src")),
			[]string{`config python.fn-execution.arrow.batch.size="2000000000": must be an integer between 1 and 4194304 (plan.BatchSizeLimit)`}},
		{"string literal", job(source(1, "src"), selectNode(2, "sel", from(1), []*planpb.NamedExpr{as("s", &planpb.Expr{Kind: &planpb.Expr_Literal{Literal: &planpb.Literal{Value: &planpb.Literal_StringValue{StringValue: strings.Repeat("x", 1<<20)}}}})})),
			[]string{"a string literal of 1048576 bytes, above the runtime's limit of 65536 (plan.StringLiteralLimit)"}},
		{"subtasks", wide, []string{"the job has 20000 operator subtasks, above the runtime's limit of 16384 (plan.SubtasksLimit)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantContains(t, planError(t, tc.job, Options{}), tc.want...)
		})
	}
}
