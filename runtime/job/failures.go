package job

import (
	"errors"
	"time"

	"github.com/flinkgo/flinkgo/udf/bridge"
)

// Failure is one failure of a job: an entry of its exception history
// (Flink's, served at /jobs/:jid/exceptions).
type Failure struct {
	// At is when it happened.
	At time.Time
	// Err is the failure as the job saw it; for a Python UDF's, its
	// Error() carries the Python traceback.
	Err error
	// Operator and Subtask name the operator subtask that failed;
	// Operator is "" for a failure of no one task (the checkpoint
	// coordinator's, a restart that could not start).
	Operator string
	Subtask  int
	// UDF and Exception name the Python UDF that raised and its
	// exception's type; "" when the failure is not a Python exception.
	UDF, Exception string
	// Restarted reports whether the job restarted after it (false for
	// the failure that ended the job).
	Restarted bool
}

// newFailure describes err, found at `at`, with what it says of where it
// happened.
func newFailure(err error, at time.Time, restarted bool) Failure {
	f := Failure{At: at, Err: err, Restarted: restarted}
	var udfErr *bridge.UDFError
	var taskErr *TaskError
	if errors.As(err, &taskErr) {
		f.Operator, f.Subtask = taskErr.Operator, taskErr.Subtask
	}
	if errors.As(err, &udfErr) {
		f.UDF, f.Exception = udfErr.UDF, udfErr.Type
		if udfErr.Operator != "" {
			f.Operator, f.Subtask = udfErr.Operator, udfErr.Subtask
		}
	}
	return f
}

// FailureHistory is a job's failures, oldest first, and how many older
// ones it dropped (beyond web.exception-history-size).
type FailureHistory struct {
	Failures []Failure
	Dropped  int
}

// Failures returns the job's failure history: every failure a restart
// recovered from and the one that ended the job, the latest
// web.exception-history-size of them. Safe at any time.
func (j *Job) Failures() FailureHistory {
	j.mu.Lock()
	defer j.mu.Unlock()
	return FailureHistory{Failures: append([]Failure(nil), j.mu.failures...), Dropped: j.mu.failuresDropped}
}

// recordFailure adds f to the history, dropping the oldest beyond the
// bound.
func (j *Job) recordFailure(f Failure) {
	f.Err = j.showNames(f.Err)
	j.mu.Lock()
	defer j.mu.Unlock()
	j.mu.failures = append(j.mu.failures, f)
	if over := len(j.mu.failures) - j.config.ExceptionHistorySize; over > 0 {
		j.mu.failures = append(j.mu.failures[:0:0], j.mu.failures[over:]...)
		j.mu.failuresDropped += over
	}
}

// recordFinalFailure records err, with which the job fails, at the time
// its failure happened: when the job went Failing, else now (a restart
// that could not start, a sink that could not publish).
func (j *Job) recordFinalFailure(err error) {
	j.mu.Lock()
	at := j.mu.failingSince
	j.mu.Unlock()
	if at.IsZero() {
		at = time.Now()
	}
	j.recordFailure(newFailure(err, at, false))
}
