// Package exec runs a physical job graph (package plan) in this process:
// one task goroutine per operator subtask, Arrow batches between tasks over
// bounded channels (a slow consumer blocks its producers: backpressure), the
// partitioners of package partition on every edge, and Python UDFs through
// the bundle operator and the go-plugin runner.
//
// Lifecycle: Run returns when every task has ended. The first failure
// cancels the job with that failure as the cause; canceling ctx cancels it
// with ctx's cause. Either way every UDF operator takes its cancel path
// (bundle-flush executor ShutdownNow, then the runner's Cancel), file sinks
// drop their in-progress parts, and every batch is released. On success
// sinks publish their parts.
//
// Decisions where DESIGN.md is silent, for now:
//   - Every operator runs in its own goroutines even where the planner
//     chained it; a forward edge is a one-to-one channel. Chained execution
//     (handing batches over by function call) is an optimization to come.
//   - Keyed aggregation keeps its groups in memory and emits them when its
//     input ends (bounded input). Incremental, state-backed aggregation of
//     unbounded input comes with keyed state (issue 4).
//
// The package builds on plan, partition, expr, source, sink, bundle and the
// plugin runner; it knows nothing of the Python client or the server.
package exec
