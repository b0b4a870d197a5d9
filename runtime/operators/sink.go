package operators

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"

	"github.com/flinkgo/flinkgo/internal/beneath"
	"github.com/flinkgo/flinkgo/runtime/checkpoint"
	"github.com/flinkgo/flinkgo/runtime/connector"
	"github.com/flinkgo/flinkgo/runtime/operator"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/runtime/rowkind"
)

// sinkKind writes into its connector's Writer: two-phase sinks (file
// sinks, exactly-once Kafka sinks) exactly-once, their output published
// when a checkpoint completes or at the end; others (print, collect) at
// least once across restarts.
func sinkKind(opts Options) operator.Kind {
	return operator.Kind{
		Kind: plan.KindSink,
		Schema: func(op *plan.Operator, in []*arrow.Schema) (*arrow.Schema, error) {
			snk, err := opts.Connectors.Sink(op.Node.GetSink())
			if err != nil {
				return nil, err
			}
			// The connector checks its options and columns before it connects.
			if err := snk.CheckSchema(in[0]); err != nil {
				return nil, err
			}
			return in[0], nil
		},
		State: operator.StateDescriptor{What: "two-phase sinks: what they precommitted (file sinks: pending parts and the part counter; Kafka sinks: transactions and the transaction counter)"},
		New: func(c *operator.Context) (operator.Operator, error) {
			snk, err := opts.Connectors.Sink(c.Op.Node.GetSink())
			if err != nil {
				return nil, err
			}
			var collect func(int, arrow.RecordBatch) error
			if opts.Collect != nil {
				op := c.Op
				collect = func(subtask int, b arrow.RecordBatch) error { return opts.Collect(op, subtask, b) }
			}
			restoring, restore := restoredSink(c.Restored, c.Subtask)
			w, err := snk.Open(connector.WriterConfig{
				Schema: c.Out, Subtask: c.Subtask, Parallelism: c.Parallelism,
				Stdout: opts.Stdout, Collect: collect, CollectBatchBytes: opts.CollectBatchBytes, Allocator: c.Allocator,
				Restoring: restoring, Restore: restore, AttemptID: c.AttemptID, Paths: opts.Paths,
			})
			if err != nil {
				return nil, err
			}
			p := &sinkProc{w: w, twoPhase: snk.CommitsAtCheckpoints(), dropUpdateBefore: c.Op.DropUpdateBefore, log: c.Logger}
			if p.twoPhase {
				p.publishAtEnd = c.PublishAtEnd
			}
			return p, nil
		},
	}
}

// sinkProc writes into a connector.Writer: published on finish, dropped on
// cancel.
type sinkProc struct {
	operator.Base
	w        connector.Writer
	twoPhase bool // connector.Sink.CommitsAtCheckpoints
	written  bool
	// publishAtEnd, when set, takes a two-phase sink's last precommit at
	// the end of its input, unpublished: the job commits it once every
	// task has finished, so that a restart before then replays no row of
	// published output.
	publishAtEnd func([]byte)
	// dropUpdateBefore makes the retract stream of an aggregation that
	// others read too an upsert stream by its keys (plan.Operator).
	dropUpdateBefore bool
	// log gets the sink's lifecycle at debug: precommits, commits, close,
	// abort; a failed commit at warn (the task fails with it too).
	log *slog.Logger
}

func (s *sinkProc) Process(ctx context.Context, _ int, b arrow.RecordBatch, _ operator.Emit) error {
	if s.dropUpdateBefore {
		upserts, err := withoutUpdateBefore(ctx, b)
		if err != nil {
			return err
		}
		defer upserts.Release()
		if upserts.NumRows() == 0 {
			return nil
		}
		b = upserts
	}
	return s.w.Write(b)
}

// withoutUpdateBefore is b without its -U rows (b retained when it has
// none); each -U is followed by the +U or -D of its key, which replaces
// the key's row in an upsert table.
func withoutUpdateBefore(ctx context.Context, b arrow.RecordBatch) (arrow.RecordBatch, error) {
	kinds := rowkind.KindsOf(b)
	n := int(b.NumRows())
	keep := make([]bool, n)
	kept := 0
	for r := range n {
		keep[r] = rowkind.At(kinds, r) != rowkind.UpdateBefore
		if keep[r] {
			kept++
		}
	}
	if kept == n {
		b.Retain()
		return b, nil
	}
	mb := array.NewBooleanBuilder(compute.GetAllocator(ctx))
	defer mb.Release()
	mb.AppendValues(keep, nil)
	mask := mb.NewBooleanArray()
	defer mask.Release()
	return compute.FilterRecordBatch(ctx, b, mask, compute.DefaultFilterOptions())
}

func (s *sinkProc) Finish(context.Context, operator.Emit) error {
	if s.publishAtEnd != nil {
		st, err := s.w.PreCommit(finalCheckpoint)
		if err != nil {
			return err
		}
		s.publishAtEnd(st)
		s.log.Debug("sink holds its last parts for the job's end")
		return nil // release's Abort keeps pending parts
	}
	s.written = true
	s.log.Debug("sink closed")
	return s.w.Close()
}

func (s *sinkProc) Release() {
	if !s.written {
		s.log.Debug("sink aborted: what no checkpoint owns is dropped")
		s.w.Abort()
	}
}

// finalCheckpoint is the checkpoint id under which a file sink holds its
// last parts back for the job's end.
const finalCheckpoint = int64(1<<63 - 1)

// SnapshotState precommits what the sink wrote before the barrier.
func (s *sinkProc) SnapshotState(_ context.Context, target checkpoint.Target, _ operator.Emit, st *checkpoint.SubtaskState) error {
	state, err := s.w.PreCommit(target.ID)
	if err != nil {
		return err
	}
	if !s.twoPhase || len(state) == 0 {
		return nil // print and collect keep nothing
	}
	s.log.Debug("sink precommitted", "checkpoint", target.ID)
	st.Sink = state
	return nil
}

// NotifyCheckpointComplete publishes the parts of every checkpoint up to
// id.
func (s *sinkProc) NotifyCheckpointComplete(id int64) error {
	if err := s.w.Commit(id); err != nil {
		s.log.Warn("sink commit failed", "checkpoint", id, "error", err)
		return err
	}
	if s.twoPhase {
		s.log.Debug("sink committed", "checkpoint", id)
	}
	return nil
}

// restoredSink is what sink subtask i restores: whether it restores, and
// the state of the old subtask i, if there was one (RecoverSinks
// committed what every old subtask precommitted before any task starts).
func restoredSink(op *checkpoint.OperatorState, subtask int) (restoring bool, state []byte) {
	if op == nil {
		return false, nil
	}
	for _, st := range op.Subtasks {
		if st.Subtask == subtask {
			return true, st.Sink
		}
	}
	return true, nil
}

// sinkOf decodes sink operator op with its connector.
func sinkOf(connectors *connector.Registry, op *plan.Operator) (connector.Sink, error) {
	snk, err := connectors.Sink(op.Node.GetSink())
	if err != nil {
		return nil, fmt.Errorf("the sink %q (uid %s): %w", op.Name, op.UID, err)
	}
	return snk, nil
}

// RecoverSinks runs every sink's recovery (connector.Sink.Recover) before
// any task of an attempt runs: file sinks publish the parts pending in the
// snapshot and delete what a failed attempt wrote after it, Kafka sinks
// commit the snapshot's transactions and abort lingering ones.
// restarting: an earlier attempt of the job ran.
func RecoverSinks(connectors *connector.Registry, g *plan.Graph, from *checkpoint.RestorePoint, restarting bool, paths beneath.Paths) error {
	for _, op := range g.Operators {
		if op.Kind != plan.KindSink {
			continue
		}
		snk, err := sinkOf(connectors, op)
		if err != nil {
			return err
		}
		rc := connector.RecoverContext{Restoring: from != nil, Restarting: restarting, Parallelism: op.Parallelism, Paths: paths}
		if st := from.Operator(op.UID); st != nil {
			rc.States = map[int][]byte{}
			for _, sub := range st.Subtasks {
				rc.States[sub.Subtask] = sub.Sink
			}
		}
		if err := snk.Recover(rc); err != nil {
			return fmt.Errorf("recovering the sink %q (uid %s): %w", op.Name, op.UID, err)
		}
	}
	return nil
}

// PrepareSinks runs every sink's step at job submission
// (connector.Sink.Prepare: a file sink's mode on its directory) and
// returns what is told when the job's output is first committed.
// restoring: the job starts from a checkpoint or savepoint.
func PrepareSinks(connectors *connector.Registry, g *plan.Graph, restoring bool, paths beneath.Paths) ([]connector.Prepared, error) {
	var prepared []connector.Prepared
	for _, op := range g.Operators {
		if op.Kind != plan.KindSink {
			continue
		}
		snk, err := sinkOf(connectors, op)
		if err != nil {
			return nil, err
		}
		p, err := snk.Prepare(restoring, paths)
		if err != nil {
			return nil, fmt.Errorf("the sink %q (uid %s): %w", op.Name, op.UID, err)
		}
		if p != nil {
			prepared = append(prepared, p)
		}
	}
	return prepared, nil
}

// KeepsOutputUntilEnd reports whether a sink of g holds its output until
// the job's end (connector.Sink.HoldsOutputUntilEnd: a file sink in mode
// "overwrite" or "append").
func KeepsOutputUntilEnd(connectors *connector.Registry, g *plan.Graph) (bool, error) {
	for _, op := range g.Operators {
		if op.Kind != plan.KindSink {
			continue
		}
		snk, err := sinkOf(connectors, op)
		if err != nil {
			return false, err
		}
		if snk.HoldsOutputUntilEnd() {
			return true, nil
		}
	}
	return false, nil
}

// PublishFinalParts commits the last precommits two-phase sink subtasks
// kept for the job's end (operator.Context.PublishAtEnd), once every task
// has finished.
func PublishFinalParts(connectors *connector.Registry, op *plan.Operator, states [][]byte, paths beneath.Paths) error {
	snk, err := sinkOf(connectors, op)
	if err != nil {
		return err
	}
	if err := snk.CommitFinal(states, paths); err != nil {
		return fmt.Errorf("publishing the last output of the sink %q (uid %s): %w", op.Name, op.UID, err)
	}
	return nil
}
