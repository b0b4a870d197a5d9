// Package connector is the contract between the runtime and its connectors,
// the counterpart of package operator for operators: what a source and a
// sink must do, and the Registry value mapping each connector's kind to
// it. The operators, the planner and the job know connectors only through
// this package; each connector is a package of its own under connectors/
// (kafka, files, datagen, nexmark, memory, collect, print), and
// connectors/builtin returns the registry of all of them.
//
// The work is divided as in Flink's FLIP-27 sources and FLIP-143 sinks:
//
// # Sources
//
// A SourceConnector declares a kind ("kafka") and Decode, which reads the
// plan's wire config of a source node (planpb.Source) into the connector's
// own Source and validates it; Source.CheckSchema then checks the node's
// declared columns, before anything connects. A Source says whether it ends
// (Boundedness, which the planner reads: a keyed aggregation over an
// endless input emits updates, collect() refuses one) and opens one Reader
// per source subtask.
//
// Splits and their enumeration: a source is cut into splits that do not
// depend on the parallelism, and each split goes to one subtask by a pure
// function of the split and the parallelism (as Flink's KafkaSource assigns
// partitions without talking to its enumerator), so that every subtask's
// reader enumerates its own splits, and discovers new ones (Kafka
// partitions) by the same rule. A Reader reads the splits its subtask owns
// (Flink's SourceReader, with a split reader per split inside it).
//
// Split state: Reader.Snapshot returns a SplitState per owned split: its
// id, whether it is done, and its Offset, bytes only the connector reads
// (the runtime stores them in the checkpoint as they are). On restore
// every subtask gets the union of all subtasks' split states (Flink's
// union-list redistribution) in ReaderConfig.Restore and keeps those of
// the splits it owns at its parallelism.
//
// Optional reader interfaces give the runtime what it needs beyond
// batches: Waiter (no data now, wake me when there is: an idle Kafka topic
// does not hold checkpoints back), CheckpointListener (Flink's
// notifyCheckpointComplete), SplitReporter (per-split watermarks), Backlog
// (Flink's pendingRecords, for the autoscaler) and Throttled (time slept
// for a rate, counted as idle).
//
// # Sinks
//
// A SinkConnector declares a kind and Decode, which reads a sink node's
// wire config (planpb.Sink) into the connector's Sink. The Sink checks its
// input's schema and the changelog it is given (CheckChangelog: which
// streams it can write, and the user's error when it cannot), and opens one
// Writer per sink subtask (FLIP-143's SinkWriter). A writer that commits at
// checkpoints is two-phase: PreCommit when the barrier passes returns the
// state the checkpoint keeps (the connector's own bytes: pending parts,
// open transactions), Commit publishes once the checkpoint completed
// (FLIP-143's Committer), Abort drops what no checkpoint owns. The Sink's
// job-level steps run outside any subtask: Prepare at submission (a file
// sink's mode), Recover before an attempt's tasks start (commit what the
// restored checkpoint precommitted, abort what failed attempts left open:
// lingering transactions), and CommitFinal at the end of a job whose last
// precommits the job holds until every task has finished.
//
// # Adding a connector
//
// Write a package with a SourceConnector or SinkConnector value (or both),
// its Source or Sink and Reader or Writer, and add it to the registry the
// job is given (job.Options.Connectors: connectors/builtin's registry
// With yours). A plan names it with planpb.ConnectorSource or
// planpb.ConnectorSink: its kind and its config in the connector's own
// encoding. Nothing registers itself.
package connector
