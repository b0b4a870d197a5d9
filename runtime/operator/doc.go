// Package operator is the contract between a task and the operators it
// runs: Operator (its lifecycle, which goroutine calls what, what may
// block), the Context an operator subtask is built with, and the Registry
// that maps each plan.Kind to its factory, output schema and state.
//
// Adding an operator is one file implementing Operator (in package
// operators), one line in that package's registry, and one planner rule
// (package plan) mapping the plan's node to its kind.
//
// This package is a leaf of the runtime: it must not import the task,
// job or operators packages (they import it).
package operator
