// Package pipeline is the runtime's public Go API: it runs a fused chain
// of Python UDFs over a stream of Arrow batches, with the chain's
// concurrency and batch size, and returns the results in input order.
//
// It sits above the runtime and runs the chain as any job: it plans source
// → the chain → collect sink with package plan (Resolve reports the
// planner's parallelism and batch size: the explicit concurrency of a
// synchronous UDF is the number of worker processes; async UDFs keep their
// concurrency inside the worker; the smallest explicit batch_size of the
// chain wins, else the global batch size) and runs it with package job,
// its source a registry row reading the caller's channel.
//
// The job runs one subtask whose UDF operator has a pool of that many
// workers (package workerpool, as an in-place rescale leaves it): batches
// go to the workers round robin and their results leave in input order, so
// the pipeline needs no merger of its own.
package pipeline
