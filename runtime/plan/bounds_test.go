package plan

import (
	"slices"
	"strings"
	"testing"

	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
	"github.com/flinkgo/flinkgo/udf/bridge/proto/workerpb"
)

func bounded(name string, lo, hi int32) *workerpb.UdfSpec {
	s := spec(name, lo, 0, false)
	s.ConcurrencyMin, s.ConcurrencyMax = lo, hi
	return s
}

// concurrency=(min, max): the operator starts at min and carries the
// bounds; UDFs with other bounds, or a fixed concurrency, get operators of
// their own; one without either joins a bounded operator.
func TestConcurrencyBoundsCarriedByOperator(t *testing.T) {
	cols := []*planpb.NamedExpr{
		as("a", call(bounded("f", 1, 4), col("x"))),
		as("b", call(spec("plain", 0, 0, false), col("x"))),
		as("c", call(bounded("g", 2, 3), col("x"))),
		as("d", call(spec("fixed", 2, 0, false), col("x"))),
	}
	_, ops := nodeOps(t, selectNode(2, "sel", from(1), cols, uid("sel")), nil)
	want := []string{
		"udf-0 p=1: f(x)->a plain(x)->b | in x | out x,a,b",
		"udf-1 p=2: g(x)->c | in x | out x,a,b,c",
		"udf-2 p=2: fixed(x)->d | in x | out a,b,c,d",
	}
	if got := summaries(ops); !slices.Equal(got, want) {
		t.Fatalf("operators\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for i, b := range []Bounds{{1, 4}, {2, 3}, {}} {
		if ops[i].Concurrency != b {
			t.Fatalf("%s: bounds %+v, want %+v", ops[i].Role, ops[i].Concurrency, b)
		}
	}
}

func TestConcurrencyBoundsValidated(t *testing.T) {
	for _, tc := range []struct {
		spec *workerpb.UdfSpec
		want string
	}{
		{bounded("f", 3, 2), "concurrency=(3, 2): the bounds must satisfy 1 <= min <= max"},
		{func() *workerpb.UdfSpec { s := bounded("f", 1, 4); s.Concurrency = 2; return s }(), "a UDF with bounds starts at its min"},
		{func() *workerpb.UdfSpec { s := bounded("f", 1, 4); s.IsAsync = true; return s }(), "an async UDF cannot declare concurrency=(min, max)"},
	} {
		cols := []*planpb.NamedExpr{as("a", call(tc.spec, col("x")))}
		j := job(source(1, "src"), selectNode(2, "sel", from(1), cols), sink(3, "out", from(2)))
		wantContains(t, planError(t, j, Options{}), `"f"`, tc.want)
	}
}
