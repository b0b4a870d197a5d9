package operators

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flinkgo/flinkgo/runtime/checkpoint"
	"github.com/flinkgo/flinkgo/runtime/operator"
	"github.com/flinkgo/flinkgo/runtime/plan"
)

// limitKind passes on the first n rows that reach it and drops the rest
// (Spark's limit). The planner runs it in one subtask over a GLOBAL edge,
// so n is exact however parallel the input. Once n rows have passed it
// ends its input (operator.Context.EndInput): the sources upstream stop,
// and the job ends even over an endless source. The count passed so far
// is its state, so a job restored from a checkpoint passes n rows in all
// (an exactly-once sink holds exactly n).
func limitKind() operator.Kind {
	return operator.Kind{
		Kind:   plan.KindLimit,
		Schema: sameAsInput,
		State:  operator.StateDescriptor{What: "the number of rows passed"},
		New: func(c *operator.Context) (operator.Operator, error) {
			l := &limitProc{n: c.Op.Node.Limit.N, endInput: c.EndInput}
			if l.n < 1 {
				return nil, fmt.Errorf("limit n is %d, must be at least 1", l.n)
			}
			if c.Restored != nil {
				for _, st := range c.Restored.Subtasks {
					var s limitState
					if len(st.Operator) == 0 {
						continue
					}
					if err := json.Unmarshal(st.Operator, &s); err != nil {
						return nil, fmt.Errorf("restoring the limit: subtask %d's state is invalid: %w", st.Subtask, err)
					}
					l.passed += s.Passed
				}
			}
			return l, nil
		},
	}
}

// limitState is what a checkpoint holds of a limit.
type limitState struct {
	Passed int64 `json:"passed"`
}

// limitProc is the limit's one subtask.
type limitProc struct {
	operator.Base
	n, passed int64
	endInput  func()
}

// Open ends the input at once when a restored limit has passed its rows
// already.
func (l *limitProc) Open(context.Context) error {
	l.endIfDone()
	return nil
}

func (l *limitProc) Process(ctx context.Context, _ int, b arrow.RecordBatch, emit operator.Emit) error {
	left := l.n - l.passed
	if left <= 0 || b.NumRows() == 0 {
		return nil // rows in flight when the sources were asked to stop
	}
	take := min(left, b.NumRows())
	l.passed += take
	var out arrow.RecordBatch
	if take == b.NumRows() {
		b.Retain()
		out = b
	} else {
		out = b.NewSlice(0, take)
	}
	if err := emit(ctx, out); err != nil {
		return err
	}
	l.endIfDone()
	return nil
}

func (l *limitProc) endIfDone() {
	if l.passed >= l.n && l.endInput != nil {
		l.endInput()
	}
}

func (l *limitProc) SnapshotState(_ context.Context, _ checkpoint.Target, _ operator.Emit, st *checkpoint.SubtaskState) error {
	var err error
	st.Operator, err = json.Marshal(limitState{Passed: l.passed})
	return err
}
