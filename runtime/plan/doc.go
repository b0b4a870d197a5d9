// Package plan is the runtime's model of a job plan and the physical
// planner. Decode (decode.go, the one place that reads the wire form
// planpb) turns the client's plan into the model (JobPlan: logical nodes
// in topological order, model.go; expressions, expr.go) once, validating
// it; Plan turns the model into a physical Graph and explains it.
// It takes the Python UDF calls out of selects and filters into fused UDF
// operators, sets every operator's parallelism and stable uid, resolves
// forward edges between operators of different parallelism, and chains
// operators. The rules it follows are in docs/semantics.md: planning,
// concurrency and batch size, partitioners, forward mismatch, key groups and
// uids.
//
// The package only reads the plan and describes a graph. It does not execute
// anything, start processes or touch Arrow data: it decodes no batch and
// takes output schemas from the runtime's registry (Options.Schemas) when
// given one; it imports nothing of bundle or udf/bridge's runners. Evaluating expressions, checking
// function names and types, and running UDFs belong to the runtime.
//
// Decisions taken where Flink and PyFlink are silent (docs/semantics.md
// gathers them):
//
//   - Parallelism: a node without one takes the job's default (the plan's
//     default_parallelism, else Options.DefaultParallelism, else 1), as in
//     Flink; no operator inherits its upstream's parallelism. The explicit
//     concurrency of a synchronous UDF sets the parallelism of the operator
//     that runs it, over the node's own: the UDF operators of a select, and
//     map_batches. The selects a node is split into keep the node's.
//   - Fusion: calls are placed in dependency order (inner calls first, then
//     columns left to right), each in the first UDF operator of its node that
//     comes at or after the operators producing its inputs and has the same
//     explicit concurrency or none; calls without concurrency and async calls
//     fit anywhere. An argument built from another call's output by a built-in
//     expression (f(g(x) + 1)) needs a select between the two, so f goes one
//     UDF operator later.
//   - Columns: temporary columns are named "__flinkgo_tmp_<n>"; the prefix
//     "__flinkgo_" is reserved and rejected in the plan's columns and uids. A
//     select column that is exactly a UDF call is produced under its own name
//     unless the node also reads a column of that name. Because schemas are
//     not decoded, the operators split from a filter keep their input's
//     columns symbolically (Operator.KeepInput, DropColumns).
//   - Edges: an input without partitioning is FORWARD with Explicit false.
//     The forward-mismatch policy applies to every forward edge, also those
//     between operators the planner added. A keyed operator's input
//     (keyed_aggregate: its group keys; drop_duplicates: its subset; an
//     interval_join's inputs: the left keys, the right keys) without
//     partitioning becomes HASH on its keys (GLOBAL when it has none); an
//     explicit partitioning that would split a key over subtasks is an
//     error unless the operator's parallelism is 1.
//   - Boundedness: a source declares whether it ends (source.Bounded);
//     every other operator's input ends when all its sources' do. A keyed
//     aggregation's AUTO emit mode resolves to UPDATES over an input that
//     never ends, else FINAL (Operator.Bounded, EmitUpdates).
//   - Output schemas: planned with Options.Schemas (the runtime's operator
//     registry, as job.PlanOptions does), every operator's output schema is
//     derived at planning (Operator.Schema) and Explain shows it; a schema
//     that cannot be derived (an unknown column, a type mismatch) fails the
//     planning.
//   - Chaining follows Flink: a forward edge of equal parallelism into an
//     operator with one input chains; an operator may chain with several
//     downstream operators; a union of several inputs starts a chain.
//   - Uids: the node's uid, else "<kind>-<id>" (stable while the node keeps
//     its id); operators split from a node are "<uid>/<role>" (pre, udf-0,
//     pre-1, udf-1, post, filter, drop). Two operators with one uid are an
//     error.
//   - Options: a non-zero option overrides the plan's config, which is read
//     (and validated) only when it is used. Policy names ignore case.
//     Max parallelism: Options.MaxParallelism, else pipeline.max-parallelism,
//     else keygroup.DefaultMaxParallelism of the largest operator
//     parallelism; no operator may exceed it.
//   - Batch size: the smallest explicit batch_size of the fused calls, else
//     python.fn-execution.arrow.batch.size, else DefaultBatchSize (10000);
//     package bundle caps it at the bundle size when it runs.
//   - Errors: Plan reports every problem it finds in one error wrapping
//     ErrInvalidPlan; problems name the node (id, name, uid) or operators
//     (name, uid).
package plan
