package bridge

import (
	"errors"
	"fmt"
	"strings"
)

// ErrNoMoreResults is returned by TakeResult when it meets the wake-up left
// by NotifyNoMoreResults. It is not a failure: the drain loop checks whether
// the flush has ended and stops or goes on.
var ErrNoMoreResults = errors.New("bridge: no more results")

// ErrClosed is returned for work given to a runner after Close or Cancel.
// The caller should stop feeding it; the runner cannot be reopened.
var ErrClosed = errors.New("bridge: runner closed")

// ErrWorkerLost means the worker process exited, was killed, or its stream
// broke while work was pending. Wrapped in a *WorkerExitError when the exit
// status is known. The job should fail (or restart) the task.
var ErrWorkerLost = errors.New("bridge: python worker lost")

// ErrWorkerStart means the worker did not start: the interpreter is missing,
// the flinkgo package is not importable, or the handshake timed out.
var ErrWorkerStart = errors.New("bridge: python worker failed to start")

// ErrResultMismatch means a UDF returned the wrong number of rows or a
// column of the wrong type. It is a bug in the user's UDF.
var ErrResultMismatch = errors.New("bridge: udf result does not match its input")

// UDFError is a Python exception raised by user code (or by the worker's
// handling of it), with the full traceback.
type UDFError struct {
	// UDF is the name of the UDF that raised; empty when the worker itself
	// failed outside any UDF.
	UDF string
	// Operator and Subtask say where it ran; Operator is empty when unknown.
	Operator string
	Subtask  int
	// Seq is the sequence number of the batch being processed, -1 when the
	// failure is not tied to a batch (Open or Close).
	Seq int64
	// Type is the Python exception type, e.g. "ZeroDivisionError".
	Type    string
	Message string
	// Traceback is Python's formatted traceback, as Python printed it.
	Traceback string
}

func (e *UDFError) Error() string {
	var b strings.Builder
	if e.UDF != "" {
		fmt.Fprintf(&b, "udf %q", e.UDF)
	} else {
		b.WriteString("python worker")
	}
	if e.Operator != "" {
		fmt.Fprintf(&b, " (operator %s, subtask %d)", e.Operator, e.Subtask)
	}
	fmt.Fprintf(&b, " raised %s", e.Type)
	if e.Seq >= 0 {
		fmt.Fprintf(&b, " on batch %d", e.Seq)
	}
	fmt.Fprintf(&b, ": %s", e.Message)
	if e.Traceback != "" {
		b.WriteString("\n")
		b.WriteString(strings.TrimRight(e.Traceback, "\n"))
	}
	return b.String()
}

// WorkerExitError describes how a worker process ended. It wraps
// ErrWorkerLost.
type WorkerExitError struct {
	// UDF (the chain's UDF names joined by "+"), Operator and Subtask say
	// which worker it was; Operator is empty when unknown.
	UDF      string
	Operator string
	Subtask  int
	Pid      int
	// How the process ended, e.g. "exit status 3" or "signal: killed";
	// "still running" when the stream broke but the process had not exited.
	Status string
	// Cause is the likely reason, when the status suggests one (a SIGKILL
	// the runtime did not send: the OOM killer, with the peak RSS).
	Cause string
	// The last lines the worker wrote to stderr.
	StderrTail []string
}

func (e *WorkerExitError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "python worker (pid %d) lost: %s", e.Pid, e.Status)
	if e.Cause != "" {
		b.WriteString("; " + e.Cause)
	}
	if len(e.StderrTail) > 0 {
		b.WriteString("; last stderr lines:\n  ")
		b.WriteString(strings.Join(e.StderrTail, "\n  "))
	}
	return b.String()
}

func (e *WorkerExitError) Unwrap() error { return ErrWorkerLost }
