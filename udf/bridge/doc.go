// Package bridge is the Go side of a Python UDF: the Runner contract that the
// external-function operator drives, and the errors a runner reports.
//
// A Runner serves one fused chain of UDFs for one operator subtask, usually
// through one Python worker process (see package pluginrunner). Batches go in
// with Process, tagged with increasing sequence numbers; exactly one Result
// comes out per batch, in the same order, through TakeResult. Flush ends a
// bundle: it blocks until every batch sent before it has its result queued.
//
// Lifecycle (Flink's PythonFunctionRunner, with a cancel of its own):
//
//	Open → (Process | TryTakeResult)* → Flush ∥ TakeResult … → … → Close
//	                                            any time → Cancel
//
// A chain of pandas aggregate functions (UDAFs) answers one row per group of
// its batch instead of one per row: the batch's first column, GroupColumn,
// numbers the groups (GroupCount).
//
// This package only defines the contract: it does not import udf/bridge/proto, start
// processes or know about bundles.
package bridge
