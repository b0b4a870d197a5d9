// Package task runs the subtasks of a job's operator chains: one goroutine
// per subtask of each chain (the planner's ChainID: operators chained to
// their input get its batches by function call, as Flink's operator
// chains), the exchange between chains (Arrow batches over bounded
// channels, so a slow consumer blocks its producers: backpressure; the
// partitioners of package partition on every edge), and checkpoint barriers
// in-band: alignment over several producers (or, for an unaligned
// checkpoint, barriers that overtake the queued batches, which become
// channel state: channelstate.go), the chain's snapshot in chain order, the asynchronous part of keyed snapshots on a goroutine of the
// task's own, and the acknowledgement to the coordinator. Watermarks and
// idle statuses travel in-band too, through a watermark.Valve per task
// (watermark.go). An operator may have more than its main output (a
// window's late rows, operator.Context.LateRows): each chained operator and
// out edge reads one output of its upstream (plan.Edge.FromOutput) and gets
// only that output's batches, while watermarks, barriers and the end of
// stream go to all of them.
//
// A task builds its operators from an operator.Registry and drives them
// through the operator.Operator contract only; it knows no operator kind.
// Cancel comes from outside the task goroutine and takes every chained
// operator's cancel path at once, as Flink's task canceler.
//
// It must not import the job, checkpoint-coordination or operators code:
// the coordinator is an interface here (Coordinator), the operators come
// from the registry it is given.
package task
