package ident

import (
	"fmt"
	"log/slog"
)

// Subtask is one operator subtask of one attempt of a job. Job and Attempt
// are left out of its log attributes when unknown ("", 0): a task built
// outside a job (tests, a single chain).
type Subtask struct {
	Job string
	// Attempt counts the job's attempts from 1 (restarts and rescales
	// start new ones).
	Attempt int
	// Vertex is the plan id of the chain's head operator: the job vertex
	// the subtask runs in.
	Vertex int
	// Operator and UID are the operator's name and uid; Index is the
	// subtask's index among the operator's parallel subtasks.
	Operator, UID string
	Index         int
}

// LogValue is the subtask's log attributes: job, attempt, vertex,
// operator, uid, subtask.
func (s Subtask) LogValue() slog.Value {
	attrs := make([]slog.Attr, 0, 6)
	if s.Job != "" {
		attrs = append(attrs, slog.String("job", s.Job))
	}
	if s.Attempt > 0 {
		attrs = append(attrs, slog.Int("attempt", s.Attempt))
	}
	attrs = append(attrs, slog.Int("vertex", s.Vertex), slog.String("operator", s.Operator),
		slog.String("uid", s.UID), slog.Int("subtask", s.Index))
	return slog.GroupValue(attrs...)
}

// Attr is s under the empty key, so that handlers inline its attributes
// (job=... operator=... rather than a nested group).
func Attr(s Subtask) slog.Attr { return slog.Any("", s) }

// String is how errors name the subtask: operator "name" (uid u, subtask i).
func (s Subtask) String() string {
	return fmt.Sprintf("operator %q (uid %s, subtask %d)", s.Operator, s.UID, s.Index)
}
