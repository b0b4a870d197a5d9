package plan

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInvalidPlan is what every planning error wraps: the job plan or the
// options cannot be planned (a validation problem, or a forward edge between
// operators of different parallelism under pipeline.forward-mismatch=fail).
// The message lists every problem found, each naming its node or operators;
// show it to the user, who fixes the pipeline. Retrying does not help.
var ErrInvalidPlan = errors.New("plan: invalid job plan")

// invalid wraps every problem into one error.
func invalid(job *JobPlan, problems []string) error {
	if len(problems) == 1 {
		return fmt.Errorf("%w %q: %s", ErrInvalidPlan, job.Name, problems[0])
	}
	return fmt.Errorf("%w %q: %d problems: %s", ErrInvalidPlan, job.Name, len(problems), strings.Join(problems, "; "))
}

// nodeLabel names a node in problems: id, name and uid.
func nodeLabel(n *Node) string {
	uid := "no uid"
	if n.UID != "" {
		uid = fmt.Sprintf("uid %q", n.UID)
	}
	return fmt.Sprintf("node %d %q (%s)", n.ID, n.Name, uid)
}

// opLabel names an operator in problems: kind, name and uid.
func opLabel(op *Operator) string {
	return fmt.Sprintf("%s (uid %q)", describe(op), op.UID)
}

// describe names an operator in reasons: `udf "score"` for UDF operators,
// the quoted name for the others.
func describe(op *Operator) string {
	if op.Kind == KindUDF {
		return fmt.Sprintf("udf %q", op.Name)
	}
	return fmt.Sprintf("%q", op.Name)
}
