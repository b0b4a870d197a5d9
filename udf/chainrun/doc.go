// Package chainrun runs a fused chain of Python UDFs over a stream of Arrow
// batches, with the chain's concurrency and batch size, and returns the
// results in input order. It is the Go API the runtime builds on, and what
// the bridge's tests and benchmarks drive.
//
// Resolve applies docs/semantics.md#concurrency-and-batch-size: the explicit
// concurrency of a synchronous UDF becomes the number of parallel subtasks (one
// worker process each); async UDFs keep their concurrency inside the worker;
// the smallest explicit batch_size of the chain wins, else the global batch
// size.
//
// Goroutines per run: one distributor (round-robin over subtasks), one
// merger (restores input order by row counts), and per subtask one task
// goroutine driving a bundle.Operator over a pluginrunner.Runner (plus that
// operator's bundle-flush goroutine and the runner's receiver).
package chainrun
