// Package checkpoint coordinates a job's checkpoints and keeps them, as
// Flink's aligned checkpoints, or unaligned ones (Target.Unaligned, whose
// channel state channelstate.go writes and reads): a Coordinator per attempt triggers them
// (execution.checkpointing.interval, and savepoints on demand) by asking
// the source tasks for barriers, collects every task's acknowledgement
// with its operators' states, writes chk-<n>/_metadata (Metadata) and
// tells the tasks that the checkpoint completed; a Store holds the
// completed checkpoints across attempts, retains the configured number and
// the keyed-state files they share; LoadMetadata reads a snapshot to
// restore (RestorePoint).
//
// Barriers, alignment and snapshots inside a task are package task's; what
// each operator saves is its own (package operator's contract). This
// package sees tasks only as Participants: it must not import the task,
// job or operators packages.
package checkpoint
