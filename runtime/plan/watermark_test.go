package plan

import (
	"slices"
	"testing"

	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
)

func watermarkNode(id int32, name string, in *planpb.Input, wa *planpb.WatermarkAssigner, opts ...nodeOpt) *planpb.Node {
	n := node(id, name, []*planpb.Input{in}, opts)
	n.Kind = &planpb.Node_WatermarkAssigner{WatermarkAssigner: wa}
	return n
}

// with_watermark on a column is one operator, "<uid>/watermarks"; on an
// expression a timestamp extractor comes first, "<uid>/extract-timestamp".
// Without a user uid both derive from the node's "<kind>-<id>".
func TestWithWatermarkUIDs(t *testing.T) {
	parse := spec("parse_ts", 0, 0, false)
	for _, tc := range []struct {
		name string
		wa   *planpb.WatermarkAssigner
		opts []nodeOpt
		want []string
	}{
		{"column", &planpb.WatermarkAssigner{TimeColumn: "ts", MaxOutOfOrdernessMs: 10}, []nodeOpt{uid("ts")},
			[]string{"ts/watermarks"}},
		{"udf", &planpb.WatermarkAssigner{TimeColumn: "t", TimeExtractor: &planpb.Select{Columns: []*planpb.NamedExpr{
			as("id", col("id")), as("s", col("s")), as("t", call(parse, col("s"))),
		}}}, []nodeOpt{uid("ts")}, []string{"ts/extract-timestamp", "ts/watermarks"}},
		{"builtin", &planpb.WatermarkAssigner{TimeColumn: "t", TimeExtractor: &planpb.Select{Columns: []*planpb.NamedExpr{
			as("id", col("id")), as("t", fn("cast", col("id"))),
		}}}, nil, []string{"watermark_assigner-2/extract-timestamp", "watermark_assigner-2/watermarks"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, ops := nodeOps(t, watermarkNode(2, "wm", from(1), tc.wa, tc.opts...), nil)
			var got []string
			for _, o := range ops {
				got = append(got, o.UID)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("uids %v, want %v\n%s", got, tc.want, g.Explain())
			}
			last := ops[len(ops)-1]
			if last.Kind != KindWatermarkAssigner || last.Role != RoleWatermarks {
				t.Errorf("last operator %s role %q, want the watermark assigner", last.Kind, last.Role)
			}
			if tc.wa.TimeExtractor != nil && ops[0].Kind != map[bool]Kind{true: KindUDF, false: KindSelect}[tc.name == "udf"] {
				t.Errorf("extractor kind %s", ops[0].Kind)
			}
			wantContains(t, g.Explain(), "uid="+tc.want[len(tc.want)-1], "event time "+tc.wa.TimeColumn)
		})
	}
}

// Adding an operator upstream changes no with_watermark uid of a node with
// a user uid (what lets a savepoint restore).
func TestWithWatermarkUIDsStableWhenTheGraphChanges(t *testing.T) {
	wa := &planpb.WatermarkAssigner{TimeColumn: "t", TimeExtractor: &planpb.Select{Columns: []*planpb.NamedExpr{
		as("id", col("id")), as("t", call(spec("parse_ts", 0, 0, false), col("id"))),
	}}}
	before := mustPlan(t, job(source(1, "src"), watermarkNode(2, "wm", from(1), wa, uid("ts")), sink(3, "out", from(2))), Options{})
	after := mustPlan(t, job(source(1, "src"), filterNode(4, "f", from(1), col("ok")),
		watermarkNode(2, "wm", from(4), wa, uid("ts")), sink(3, "out", from(2))), Options{})
	for _, u := range []string{"ts/extract-timestamp", "ts/watermarks"} {
		op(t, before, u)
		op(t, after, u)
	}
}

func TestWithWatermarkValidation(t *testing.T) {
	msg := planError(t, job(source(1, "src"), watermarkNode(2, "wm", from(1), &planpb.WatermarkAssigner{
		TimeColumn: "", MaxOutOfOrdernessMs: -1, IdleTimeoutMs: -5,
		TimeExtractor: &planpb.Select{Columns: []*planpb.NamedExpr{as("id", col("id"))}},
	}), sink(3, "out", from(2))), Options{})
	wantContains(t, msg, "with_watermark time column", "max_out_of_orderness is -1 ms", "idle_timeout is -5 ms",
		`does not compute the time column ""`)
}
