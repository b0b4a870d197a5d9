// Package workerpool is a bridge.Runner over a resizable set of runners (one
// Python worker each): the worker pool of one UDF operator subtask, which a
// rescale grows or shrinks while the job runs.
//
// Batches go to the serving members round robin, each member numbering its
// own batches from 0 as a lone runner would; results come out in the order
// the batches went in (the pool reassembles them by sequence number), so the
// operator above sees one runner: its output order and its join with the
// input rows it passed through stay as they are with one worker.
//
// Resize(n) changes the number of members at a batch boundary:
//   - Growing opens the new members in the background; each joins the round
//     robin at the first Process after it is ready, so the task never waits
//     for a worker to start.
//   - Shrinking takes members out of the round robin at once (the newest
//     first); a retiring member answers what it was sent, is flushed by the
//     pool at once (it finishes its bundle without waiting for the
//     operator's next Flush) and is then closed in order.
//
// Close closes every member in order, Cancel cancels every member
// (bridge.CancelRunner: never blocks on a stuck worker), members being
// opened or retired included. Any member's failure (a worker that crashed, a
// UDF that raised, a grown member that did not start) fails the pool, and
// with it the operator and the job, as a lone runner's failure does.
//
// Goroutines: one collector per member, moving its results into the pool's
// reassembly; one per member being opened or closed in the background. All
// end before Close or Cancel returns.
package workerpool
