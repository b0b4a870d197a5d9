// Package job runs a physical job graph (package plan) in this process: its
// lifecycle, attempts and restarts. Each attempt builds the tasks (package
// task: one goroutine per subtask of each chain, the exchange between
// them) from the operator registry (package operators), starts the
// checkpoint coordinator (package checkpoint), and ends when every task
// has.
//
// Lifecycle: a job goes through the states of Flink's JobStatus (JobState;
// Options.OnStateChange observes them). Run returns when every task has
// ended. The first failure cancels the job with that failure as the cause; canceling ctx cancels it
// with ctx's cause. Either way every UDF operator takes its cancel path
// (bundle-flush executor ShutdownNow, then the runner's Cancel), file sinks
// drop their in-progress parts, and every batch is released. On success
// sinks publish their parts.
//
// Checkpoints (docs/semantics.md#checkpoints), as Flink's aligned checkpoints: a
// coordinator per attempt triggers them (execution.checkpointing.interval,
// and savepoints on demand); barriers travel in-band from the sources;
// tasks align them, snapshot their chain (a UDF finishes its bundle first,
// sources record split positions, file sinks precommit their parts, keyed
// state takes a Pebble checkpoint and writes it out on a goroutine of its
// own while data flows on) and acknowledge; the coordinator writes chk-<n>/_metadata and tells the tasks,
// and file sinks publish. A failure restarts the job from the latest
// completed checkpoint when the restart strategy allows (state RESTARTING),
// with sources rewound and unpublished parts discarded, so published output
// is exactly-once. Each failure a restart recovered from, and the one that
// ended the job, goes into its exception history (Job.Failures, bounded by
// web.exception-history-size). Config keys: package config.
//
// Rescale (docs/semantics.md#rescaling-a-running-job), as Flink's adaptive
// scheduler (FLIP-291, FLIP-461): Job.Rescale sets parallelism by uid
// (Options.Replan plans the job again), and the next completed checkpoint
// after the cooldown, or max-checkpoint-failures failed ones, stops the
// attempt and starts one at the new parallelism from the latest completed
// checkpoint (state RESTARTING, not counted as a failure); Job.Rescales is
// the history.
//
// Decisions where Flink is silent, for now (docs/semantics.md gathers them):
//   - One checkpoint at a time (Flink's default). Once a task has finished
//     (a bounded source ran out), no checkpoint is triggered any more. When
//     the job may restart (checkpoints, a restore, or a restart strategy),
//     a file sink that reaches the end of its input keeps its last parts
//     hidden, and the job publishes them when every task has finished (the
//     end of Flink's FLIP-147 final checkpoint): a restart before that
//     replays no row of a published part. File sinks in mode "overwrite"
//     or "append" do the same, so that a failed run adds nothing visible.
//   - File sink modes are applied once per job at submission, before the
//     first attempt (not per attempt, not on a restore); "overwrite"
//     deletes what it found there when a checkpoint completes or the job
//     ends, whichever comes first (Spark: at job commit).
//   - Print and collect sinks are at-least-once across restarts.
//   - A stop with savepoint stops the sources, waits (up to 30 s) for every
//     task to act on the savepoint's completion, then ends the job FINISHED.
//   - In a chain, upstream operators finish first (what one emits as it
//     finishes reaches the next before that one finishes); an error names
//     the chained operator it came from.
//   - Keyed aggregation emits one row per group when its input ends. Its
//     groups live in memory, and a checkpoint writes those changed since
//     the last one into the subtask's Pebble backend (package state) and
//     snapshots it incrementally; past Options.KeyedCacheGroups groups the
//     memory is dropped and groups are read back as keys recur. A job that
//     never checkpoints never opens a backend.
//
// The package builds on config, plan, checkpoint, task and operators; it
// must not import the server or know of the Python client, and nothing
// below it (task, checkpoint, operator, operators) may import it.
package job
