package task

import "fmt"

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
