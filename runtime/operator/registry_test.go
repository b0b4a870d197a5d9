package operator

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flinkgo/flinkgo/runtime/plan"
)

func TestRegistryRejectsIncompleteAndDuplicateKinds(t *testing.T) {
	schema := func(*plan.Operator, []*arrow.Schema) (*arrow.Schema, error) { return nil, nil }
	build := func(*Context) (Operator, error) { return nil, nil }
	for _, tc := range []struct {
		name  string
		kinds []Kind
		want  string
	}{
		{"twice", []Kind{{Kind: plan.KindFilter, Schema: schema, New: build}, {Kind: plan.KindFilter, Schema: schema, New: build}}, "registered twice"},
		{"no schema", []Kind{{Kind: plan.KindFilter, New: build}}, "needs a Schema"},
		{"no constructor", []Kind{{Kind: plan.KindFilter, Schema: schema}}, "exactly one of New and OpenSource"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewRegistry(tc.kinds...); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error saying %q", err, tc.want)
			}
		})
	}
	r, err := NewRegistry(Kind{Kind: plan.KindFilter, Schema: schema, New: build})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Lookup(plan.KindUnion); err == nil || !strings.Contains(err.Error(), "union") {
		t.Fatalf("looking up an unregistered kind: %v", err)
	}
}

// Base forwards watermarks unchanged: an operator that does not handle
// event time passes it on.
func TestBaseForwardsWatermarks(t *testing.T) {
	var b Base
	wm := Watermark(5)
	got, err := b.OnWatermark(t.Context(), wm, nil)
	if err != nil || got != wm {
		t.Fatalf("got %v, %v", got, err)
	}
}
