// Package chainrun is the Go API for running a fused chain of Python UDFs
// over a stream of Arrow batches, with the chain's concurrency and batch
// size, and returning the results in input order.
//
// It runs the chain on the runtime, with the runtime's own chain resolution
// and operators: it plans source → the chain → collect sink with package
// plan (Resolve reports the planner's parallelism and batch size: the
// explicit concurrency of a synchronous UDF becomes the number of parallel
// subtasks, one worker process each; async UDFs keep their concurrency
// inside the worker; the smallest explicit batch_size of the chain wins,
// else the global batch size), and runs it with package job, its source a
// registry row reading the caller's channel.
//
// Goroutines per run, besides the job's (one task per subtask, each driving
// the runtime's UDF operator): one distributor (round-robin over subtasks)
// and one merger (restores input order by row counts).
package chainrun
