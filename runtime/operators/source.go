package operators

import (
	"encoding/json"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flinkgo/flinkgo/runtime/checkpoint"
	"github.com/flinkgo/flinkgo/runtime/connector"
	"github.com/flinkgo/flinkgo/runtime/operator"
	"github.com/flinkgo/flinkgo/runtime/plan"
)

// sourceKind reads a source, through its connector, in its task; the
// client declared its schema.
func sourceKind(opts Options) operator.Kind {
	return operator.Kind{
		Kind: plan.KindSource,
		Schema: func(op *plan.Operator, _ []*arrow.Schema) (*arrow.Schema, error) {
			s, err := decodeSchema(op.OutputSchema)
			if err != nil {
				return nil, err
			}
			src, err := opts.Connectors.Source(op.Node.GetSource())
			if err != nil {
				return nil, err
			}
			// The connector checks its options and columns before it connects.
			if err := src.CheckSchema(s); err != nil {
				return nil, err
			}
			return s, nil
		},
		State: operator.StateDescriptor{What: "split positions (union list state)"},
		OpenSource: func(c *operator.Context) (connector.Reader, error) {
			restore, err := restoredSplits(c.Restored)
			if err != nil {
				return nil, err
			}
			src, err := opts.Connectors.Source(c.Op.Node.GetSource())
			if err != nil {
				return nil, err
			}
			return src.Open(connector.ReaderConfig{
				Schema: c.Out, Subtask: c.Subtask, Parallelism: c.Parallelism,
				BatchRows: opts.SourceBatchRows, Allocator: c.Allocator, Restore: restore, Logger: c.Logger,
				Paths: opts.Paths,
			})
		},
	}
}

// restoredSplits is the union of the split positions of every subtask of a
// source in a snapshot (each new subtask picks the splits it owns, as
// Flink's union list state); nil for a fresh start.
func restoredSplits(op *checkpoint.OperatorState) ([]connector.SplitState, error) {
	if op == nil {
		return nil, nil
	}
	union := []connector.SplitState{}
	for _, st := range op.Subtasks {
		var splits []connector.SplitState
		if err := json.Unmarshal(st.Source, &splits); err != nil {
			return nil, fmt.Errorf("restoring the source %q (uid %s): subtask %d's position is invalid: %w", op.Name, op.UID, st.Subtask, err)
		}
		union = append(union, splits...)
	}
	return union, nil
}
