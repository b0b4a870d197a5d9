package operators

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flinkgo/flinkgo/runtime/plan"
)

// An aggregate whose accumulator would come out wrong for the column's
// type (a uint64 above 2^63-1 kept as int64, the sum of timestamps) is
// refused when the job is planned, naming the column and a cast.
func TestAggregatesRefuseTypesTheyWouldGetWrong(t *testing.T) {
	in := arrow.NewSchema([]arrow.Field{
		{Name: "i", Type: arrow.PrimitiveTypes.Int32},
		{Name: "u", Type: arrow.PrimitiveTypes.Uint64},
		{Name: "f", Type: arrow.PrimitiveTypes.Float32},
		{Name: "s", Type: arrow.BinaryTypes.String},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Millisecond}},
		{Name: "b", Type: arrow.FixedWidthTypes.Boolean},
	}, nil)
	for _, tc := range []struct {
		fn, column string
		refused    bool
	}{
		{"sum", "i", false}, {"mean", "f", false}, {"min", "s", false}, {"max", "i", false}, {"count", "ts", false},
		{"min", "ts", false}, {"max", "ts", false},
		{"sum", "u", true}, {"max", "u", true}, {"max", "b", true}, {"sum", "s", true}, {"mean", "ts", true}, {"sum", "ts", true},
	} {
		_, err := parseAggSpec(&plan.Aggregate{Function: tc.fn, Column: tc.column}, in, keyedAggregateFunctions)
		switch {
		case tc.refused && (err == nil || !strings.Contains(err.Error(), tc.fn+"("+tc.column+")")):
			t.Errorf("%s(%s): want an error naming it, got %v", tc.fn, tc.column, err)
		case !tc.refused && err != nil:
			t.Errorf("%s(%s): %v", tc.fn, tc.column, err)
		}
	}
}
