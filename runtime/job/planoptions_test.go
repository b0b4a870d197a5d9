package job

import (
	"strings"
	"testing"

	"github.com/flinkgo/flinkgo/runtime/plan"
)

// PlanOptions plans with the runtime's operators deriving every output
// schema: Explain shows them, the select's computed from its expressions.
func TestPlanOptionsDeriveOutputSchemas(t *testing.T) {
	g := keyedSums(t, 100, 0, 2, t.TempDir(), nil)
	var nodes []*plan.Node
	for _, op := range g.Operators {
		nodes = append(nodes, op.Node)
	}
	jp := &plan.JobPlan{Name: "keyed", Nodes: nodes}
	opts, err := PlanOptions(jp)
	if err != nil {
		t.Fatal(err)
	}
	g, err = plan.Plan(jp, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"    output: id int64\n",
		"    output: id int64, k int64\n",
		"    output: k int64, total int64, n int64, lo int64, hi int64, avg float64\n",
	} {
		if !strings.Contains(g.Explain(), want) {
			t.Errorf("Explain lacks %q:\n%s", want, g.Explain())
		}
	}
}
