// Package pluginrunner implements bridge.Runner with a Python worker process
// (`python -m flinkgo.worker`) started and supervised through
// hashicorp/go-plugin over gRPC.
//
// One Runner owns one worker. Batches travel as Arrow IPC (Options.Transport):
// by default on Linux through a memfd both processes map, a slot per batch in
// flight, with only slot numbers and lengths on a framed Unix socket
// (sharedmem.go); else as whole streams on that socket or on the gRPC
// Process stream. Up to Options.MaxInFlight batches are in flight so Python
// never waits on Go. A receiver goroutine checks every result (its
// sequence number, row count and column types) and queues it for TakeResult.
//
// Goroutines per runner: one receiver, plus go-plugin's own (stderr reader,
// process waiter, stdio stream). All end when Close or Cancel returns.
//
// Failure reporting: a Python exception becomes a *bridge.UDFError with the
// traceback; a worker that exits or is killed becomes a
// *bridge.WorkerExitError (exit status or signal, last stderr lines); a
// result of the wrong shape wraps bridge.ErrResultMismatch. Every pending
// batch and waiter fails with the same error, so nothing stays blocked.
//
// Logging: everything goes to Options.Logger (a *slog.Logger; nil
// discards), tagged with the UDF, operator, subtask and worker pid: the
// worker's own log lines (JSON on its stderr, parsed by go-plugin through an
// hclog adapter, levels kept), what user code prints (info, or to
// Options.UDFOutput with a "[udf #subtask] " prefix), go-plugin's messages
// (debug), the worker's start (debug) and an unexpected exit (warn, with
// the exit status). Once the runner kills its worker (Cancel), the worker's
// records and output are debug. Lines are cut at a bound (output.go), so no
// output grows the runtime's memory. Nothing is logged per batch.
//
// Metrics: Options.Metrics (the runtime gives runtime/metrics.UDF) counts the batches and
// rows sent, each answered batch's time at the worker (from its send, or
// from the previous answer when the worker was busy, to its result), the
// batches in flight and the worker's pid; atomics only per batch.
//
// Reuse: with Options.Pool, Open takes an idle worker of the same
// environment instead of starting one, and a Close that ended in order
// gives the worker back (see Pool and docs/semantics.md#worker-reuse).
//
// The package knows nothing about bundles or operators: see package bundle.
package pluginrunner
