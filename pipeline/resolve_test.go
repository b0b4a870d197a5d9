package pipeline

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flinkgo/flinkgo/udf/bridge/proto/workerpb"
)

func call(name string, concurrency, batchSize int32, async bool) *workerpb.UdfCall {
	return &workerpb.UdfCall{Udf: &workerpb.UdfSpec{Name: name, Concurrency: concurrency, BatchSize: batchSize, IsAsync: async}}
}

var schema = arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil)

func TestResolve(t *testing.T) {
	for _, tc := range []struct {
		name  string
		calls []*workerpb.UdfCall
		opts  Options
		want  Resolved
	}{
		{"defaults", []*workerpb.UdfCall{call("a", 0, 0, false)}, Options{}, Resolved{1, 10000}},
		{"global options", []*workerpb.UdfCall{call("a", 0, 0, false)}, Options{Parallelism: 3, BatchSize: 77}, Resolved{3, 77}},
		{"explicit concurrency wins", []*workerpb.UdfCall{call("a", 4, 0, false), call("b", 0, 0, false)}, Options{Parallelism: 2}, Resolved{4, 10000}},
		{"async concurrency stays in the worker", []*workerpb.UdfCall{call("a", 16, 0, true)}, Options{Parallelism: 2}, Resolved{2, 10000}},
		{"smallest batch size", []*workerpb.UdfCall{call("a", 0, 500, false), call("b", 0, 0, false), call("c", 0, 200, true)}, Options{BatchSize: 50}, Resolved{1, 200}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Resolve(Chain{Calls: tc.calls, InputSchema: schema}, tc.opts)
			if err != nil || got != tc.want {
				t.Fatalf("Resolve = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

func TestResolveErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		chain Chain
		opts  Options
		want  string
	}{
		{"different concurrency", Chain{Calls: []*workerpb.UdfCall{call("a", 2, 0, false), call("b", 3, 0, false)}, InputSchema: schema}, Options{},
			`udf "a" (concurrency=2) and udf "b" (concurrency=3) cannot share a chain`},
		{"negative options", Chain{Calls: []*workerpb.UdfCall{call("a", 0, 0, false)}, InputSchema: schema}, Options{Parallelism: -1, BatchSize: -5},
			"Parallelism is -1; BatchSize is -5"},
		{"empty chain", Chain{InputSchema: schema}, Options{}, "needs calls and an input schema"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Resolve(tc.chain, tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Resolve error = %v; want it to contain %q", err, tc.want)
			}
		})
	}
}
