// Package bundle groups Arrow batches into bundles for a Python UDF runner and
// tracks their completion: it re-batches input to the UDF's batch size (cut by
// rows and by bytes) and emits results in input order. A bundle that ends on
// size or time only sends its rows: it finishes when its last result is
// emitted, while the next bundle's batches already go out, so the runner's
// in-flight window stays full across the boundary. An explicit trigger
// (checkpoint barrier, watermark, end of input, close, the deadline timer)
// finishes every bundle: it runs the runner's Flush on a dedicated
// bundle-flush executor while the task goroutine drains results, so nothing
// is in flight when it returns.
//
// It mirrors Flink's AbstractExternalPythonFunctionOperator: Close is
// graceful (finish the bundle, close the runner, shut the executor down in
// order); Cancel is the canceled-or-failing path (shut the executor down now,
// then cancel the runner, never close it). Every failure of the operator
// takes the Cancel path. The rules are docs/semantics.md#bundles and
// docs/semantics.md#close-versus-cancel.
//
// Goroutines per operator: the task goroutine that calls it, one bundle-flush
// goroutine (started with the first flush), and during a flush one short-lived
// watcher of the executor's shutdown.
//
// This package drives the bridge.Runner contract only: it must not import
// udf/bridge/proto, the planner or the runtime, or start processes.
package bundle
