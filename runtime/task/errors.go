package task

import (
	"fmt"
	"runtime/debug"
)

// TaskError is the failure of one operator subtask.
type TaskError struct {
	Operator, UID string
	Subtask       int
	Err           error
}

func (e *TaskError) Error() string {
	return fmt.Sprintf("operator %q (uid %s, subtask %d): %v", e.Operator, e.UID, e.Subtask, e.Err)
}

func (e *TaskError) Unwrap() error { return e.Err }

// PanicError is the failure of a goroutine of a job that panicked: a bug,
// reported with its stack so it can be fixed, and recovered so that only
// that job fails (a server runs other jobs).
func PanicError(r any) error {
	return fmt.Errorf("internal error (a bug in flinkgo, please report it with this trace): panic: %v\n%s", r, debug.Stack())
}
