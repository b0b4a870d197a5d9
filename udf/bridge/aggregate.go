package bridge

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// GroupColumn is the first column of a batch sent to a chain of pandas
// aggregate functions (FUNC_TYPE_PANDAS_AGGREGATE): an int32 numbering the
// groups 0, 1, ... in runs, a group's rows contiguous. The result has one
// row per group, in that order (docs/semantics.md#pandas-udafs).
const GroupColumn = "__flinkgo_group"

// GroupCount returns the number of groups of an aggregate batch (its last
// group id + 1), checking that the group column numbers them in runs.
func GroupCount(b arrow.RecordBatch) (int64, error) {
	if b.NumCols() == 0 || b.ColumnName(0) != GroupColumn {
		return 0, fmt.Errorf("an aggregate batch must start with the int32 column %q", GroupColumn)
	}
	ids, ok := b.Column(0).(*array.Int32)
	if !ok || ids.NullN() > 0 {
		return 0, fmt.Errorf("the group column %q must be int32 without nulls, got %s", GroupColumn, b.Column(0).DataType())
	}
	prev := int32(-1)
	for _, g := range ids.Int32Values() {
		if g != prev && g != prev+1 {
			return 0, fmt.Errorf("the group column %q must number groups 0, 1, ... in runs; %d follows %d", GroupColumn, g, prev)
		}
		prev = g
	}
	return int64(prev) + 1, nil
}
