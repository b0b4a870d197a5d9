package task

import (
	"fmt"
	"runtime/debug"

	"github.com/flinkgo/flinkgo/runtime/ident"
)

// TaskError is the failure of one operator subtask.
type TaskError struct {
	Operator, UID string
	Subtask       int
	Err           error
}

// subtaskError is err as the failure of the subtask id.
func subtaskError(id ident.Subtask, err error) *TaskError {
	return &TaskError{Operator: id.Operator, UID: id.UID, Subtask: id.Index, Err: err}
}

func (e *TaskError) Error() string {
	return fmt.Sprintf("%s: %v", ident.Subtask{Operator: e.Operator, UID: e.UID, Index: e.Subtask}, e.Err)
}

func (e *TaskError) Unwrap() error { return e.Err }

// PanicError is the failure of a goroutine of a job that panicked: a bug,
// reported with its stack so it can be fixed, and recovered so that only
// that job fails (a server runs other jobs).
func PanicError(r any) error {
	return fmt.Errorf("internal error (a bug in flinkgo, please report it with this trace): panic: %v\n%s", r, debug.Stack())
}
