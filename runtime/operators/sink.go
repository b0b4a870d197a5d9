package operators

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"

	"github.com/flinkgo/flinkgo/internal/beneath"
	"github.com/flinkgo/flinkgo/runtime/checkpoint"
	"github.com/flinkgo/flinkgo/runtime/operator"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
	"github.com/flinkgo/flinkgo/runtime/rowkind"
	"github.com/flinkgo/flinkgo/runtime/sink"
)

// sinkKind writes into a sink.Writer: file sinks exactly-once (their parts
// published when a checkpoint completes, or at the end), Kafka sinks as
// their delivery says (exactly-once: transactions committed when a
// checkpoint completes), print and collect sinks at-least-once across
// restarts.
func sinkKind(opts Options) operator.Kind {
	return operator.Kind{
		Kind: plan.KindSink,
		Schema: func(op *plan.Operator, in []*arrow.Schema) (*arrow.Schema, error) {
			// A Kafka sink's options and columns are checked before it connects.
			if k := op.Node.GetSink().GetKafka(); k != nil {
				if err := sink.ValidateKafka(k, in[0]); err != nil {
					return nil, err
				}
			}
			return in[0], nil
		},
		State: operator.StateDescriptor{What: "file sinks: pending parts and the part counter; Kafka sinks: precommitted transactions and the transaction counter"},
		New: func(c *operator.Context) (operator.Operator, error) {
			var collect func(int, arrow.RecordBatch) error
			if opts.Collect != nil {
				op := c.Op
				collect = func(subtask int, b arrow.RecordBatch) error { return opts.Collect(op, subtask, b) }
			}
			restore, err := restoredSink(c.Restored, c.Subtask)
			if err != nil {
				return nil, err
			}
			w, err := sink.Open(c.Op.Node.GetSink(), sink.Config{
				Schema: c.Out, Subtask: c.Subtask, Parallelism: c.Parallelism,
				Stdout: opts.Stdout, Collect: collect, CollectBatchBytes: opts.CollectBatchBytes, Allocator: c.Allocator,
				Restore: restore, AttemptID: c.AttemptID, Paths: opts.Paths,
			})
			if err != nil {
				return nil, err
			}
			p := &sinkProc{w: w, file: keepsState(c.Op.Node.GetSink()), dropUpdateBefore: c.Op.DropUpdateBefore, log: c.Logger}
			if p.file {
				p.publishAtEnd = c.PublishAtEnd
			}
			return p, nil
		},
	}
}

// sinkProc writes into a sink.Writer: published on finish, dropped on
// cancel.
type sinkProc struct {
	operator.Base
	w       sink.Writer
	file    bool // keeps state (keepsState): a file or exactly-once Kafka sink
	written bool
	// publishAtEnd, when set, takes a file sink's last parts at the end of
	// its input, hidden: the job publishes them once every task has
	// finished, so that a restart before then replays no row of a
	// published part.
	publishAtEnd func(sink.SinkState)
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
	if !s.file {
		return nil // print and collect keep nothing
	}
	s.log.Debug("sink precommitted", "checkpoint", target.ID)
	st.Sink, err = json.Marshal(state)
	return err
}

// NotifyCheckpointComplete publishes the parts of every checkpoint up to
// id.
func (s *sinkProc) NotifyCheckpointComplete(id int64) error {
	if err := s.w.Commit(id); err != nil {
		s.log.Warn("sink commit failed", "checkpoint", id, "error", err)
		return err
	}
	if s.file {
		s.log.Debug("sink committed", "checkpoint", id)
	}
	return nil
}

// keepsState reports whether a sink has checkpointed state: file sinks
// and exactly-once Kafka sinks. An at-least-once or "none" Kafka sink
// keeps none, and ends by Close, which waits for its last records.
func keepsState(s *planpb.Sink) bool {
	if k := s.GetKafka(); k != nil {
		return k.GetDelivery() == planpb.KafkaSink_EXACTLY_ONCE || k.GetDelivery() == planpb.KafkaSink_DELIVERY_UNSPECIFIED
	}
	return s.GetFile() != nil
}

// sinkState decodes one subtask's sink state.
func sinkState(op *checkpoint.OperatorState, st checkpoint.SubtaskState) (sink.SinkState, error) {
	var s sink.SinkState
	if err := json.Unmarshal(st.Sink, &s); err != nil {
		return s, fmt.Errorf("restoring the sink %q (uid %s): subtask %d's state is invalid: %w", op.Name, op.UID, st.Subtask, err)
	}
	return s, nil
}

// restoredSink is what sink subtask i restores: the part counter of the
// old subtask i, if there was one (RecoverSinks published the pending
// parts of all of them before any task starts).
func restoredSink(op *checkpoint.OperatorState, subtask int) (*sink.SinkState, error) {
	if op == nil {
		return nil, nil
	}
	for _, st := range op.Subtasks {
		if st.Subtask == subtask {
			s, err := sinkState(op, st)
			if err != nil {
				return nil, err
			}
			return &sink.SinkState{Counter: s.Counter}, nil
		}
	}
	return &sink.SinkState{}, nil
}

// RecoverSinks publishes the parts pending in the snapshot of every file
// sink (its checkpoint completed) and deletes what a failed attempt wrote
// after it, before any task runs. A restart without a snapshot deletes
// everything hidden the failed attempt wrote; the first attempt of a fresh
// job touches nothing.
func RecoverSinks(g *plan.Graph, from *checkpoint.RestorePoint, restarting bool, paths beneath.Paths) error {
	for _, op := range g.Operators {
		if k := op.Node.GetSink().GetKafka(); op.Kind == plan.KindSink && k != nil {
			if err := recoverKafka(op, k, from); err != nil {
				return err
			}
			continue
		}
		file := op.Node.GetSink().GetFile()
		if op.Kind != plan.KindSink || file == nil {
			continue
		}
		var states []sink.SinkState
		if st := from.Operator(op.UID); st != nil {
			for _, sub := range st.Subtasks {
				s, err := sinkState(st, sub)
				if err != nil {
					return err
				}
				states = append(states, s)
			}
		} else if from == nil && !restarting {
			continue
		}
		if err := sink.RecoverBeneath(paths, file, states); err != nil {
			return fmt.Errorf("recovering the sink %q (uid %s): %w", op.Name, op.UID, err)
		}
	}
	return nil
}

// recoverKafka commits the transactions a Kafka sink precommitted in the
// snapshot and aborts those earlier attempts left open, on every start
// (a fresh job too, as Flink: a crashed run with the same prefix may have
// left some).
func recoverKafka(op *plan.Operator, k *planpb.KafkaSink, from *checkpoint.RestorePoint) error {
	states := map[int]sink.SinkState{}
	if st := from.Operator(op.UID); st != nil {
		for _, sub := range st.Subtasks {
			s, err := sinkState(st, sub)
			if err != nil {
				return err
			}
			states[sub.Subtask] = s
		}
	}
	if err := sink.RecoverKafka(k, states, op.Parallelism); err != nil {
		return fmt.Errorf("recovering the sink %q (uid %s): %w", op.Name, op.UID, err)
	}
	return nil
}

// PrepareSinks applies the mode of every file sink to its directory at
// job submission (sink.Prepare): it refuses a non-empty directory in mode
// "error" and returns what mode "overwrite" deletes once the job's output
// is committed. restoring: the job starts from a checkpoint or savepoint.
func PrepareSinks(g *plan.Graph, restoring bool, paths beneath.Paths) ([]*sink.Previous, error) {
	var prev []*sink.Previous
	for _, op := range g.Operators {
		file := op.Node.GetSink().GetFile()
		if op.Kind != plan.KindSink || file == nil {
			continue
		}
		p, err := sink.PrepareBeneath(paths, file, restoring)
		if err != nil {
			return nil, fmt.Errorf("the sink %q (uid %s): %w", op.Name, op.UID, err)
		}
		if p != nil {
			prev = append(prev, p)
		}
	}
	return prev, nil
}

// KeepsOutputUntilEnd reports whether a file sink of g has mode "overwrite"
// or "append": its parts must stay hidden until the job's output is
// committed, so that a failed run adds nothing visible to the directory.
func KeepsOutputUntilEnd(g *plan.Graph) bool {
	for _, op := range g.Operators {
		if file := op.Node.GetSink().GetFile(); op.Kind == plan.KindSink && file != nil && file.GetMode() != planpb.FileSink_ERROR {
			return true
		}
	}
	return false
}

// PublishFinalParts publishes the last parts file sink subtasks kept for
// the job's end (operator.Context.PublishAtEnd), once every task has
// finished.
func PublishFinalParts(op *plan.Operator, states []sink.SinkState, paths beneath.Paths) error {
	if k := op.Node.GetSink().GetKafka(); k != nil {
		var txns []sink.KafkaTransaction
		for _, st := range states {
			txns = append(txns, st.Transactions...)
		}
		if err := sink.CommitKafka(k, txns); err != nil {
			return fmt.Errorf("committing the last transactions of the sink %q (uid %s): %w", op.Name, op.UID, err)
		}
		return nil
	}
	if err := sink.RecoverBeneath(paths, op.Node.GetSink().GetFile(), states); err != nil {
		return fmt.Errorf("publishing the parts of the sink %q (uid %s): %w", op.Name, op.UID, err)
	}
	return nil
}
