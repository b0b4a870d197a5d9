package exec

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/runtime/sink"
	"github.com/flinkgo/flinkgo/runtime/source"
)

// How each kind of operator saves and restores its state in a snapshot
// (SubtaskState): sources their split positions, file sinks their
// pending parts and part counter, keyed operators their keyed state.

// positioned is a source reader whose position a checkpoint holds.
type positioned interface {
	Snapshot() ([]source.SplitState, error)
}

// snapshotSource records the source's position in st.
func (t *task) snapshotSource(st *SubtaskState) error {
	r, ok := t.reader.(positioned)
	if !ok {
		return fmt.Errorf("the source cannot be checkpointed")
	}
	splits, err := r.Snapshot()
	if err != nil {
		return err
	}
	st.Source, err = json.Marshal(splits)
	return err
}

// restoredSplits is the union of the split positions of every subtask of a
// source in a snapshot (each new subtask picks the splits it owns, as
// Flink's union list state); nil for a fresh start.
func restoredSplits(op *OperatorState) ([]source.SplitState, error) {
	if op == nil {
		return nil, nil
	}
	union := []source.SplitState{}
	for _, st := range op.Subtasks {
		var splits []source.SplitState
		if err := json.Unmarshal(st.Source, &splits); err != nil {
			return nil, fmt.Errorf("restoring the source %q (uid %s): subtask %d's position is invalid: %w", op.Name, op.UID, st.Subtask, err)
		}
		union = append(union, splits...)
	}
	return union, nil
}

// sinkState decodes one subtask's sink state.
func sinkState(op *OperatorState, st SubtaskState) (sink.SinkState, error) {
	var s sink.SinkState
	if err := json.Unmarshal(st.Sink, &s); err != nil {
		return s, fmt.Errorf("restoring the sink %q (uid %s): subtask %d's state is invalid: %w", op.Name, op.UID, st.Subtask, err)
	}
	return s, nil
}

// restoredSink is what sink subtask i restores: the part counter of the
// old subtask i, if there was one (Recover published the pending parts of
// all of them before any task starts).
func restoredSink(op *OperatorState, subtask int) (*sink.SinkState, error) {
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

// recoverSinks publishes the parts pending in the snapshot of every file
// sink (its checkpoint completed) and deletes what a failed attempt wrote
// after it, before any task runs. A restart without a snapshot deletes
// everything hidden the failed attempt wrote; the first attempt of a fresh
// job touches nothing.
func recoverSinks(g *plan.Graph, from *restorePoint, restarting bool) error {
	for _, op := range g.Operators {
		file := op.Node.GetSink().GetFile()
		if op.Kind != plan.KindSink || file == nil {
			continue
		}
		var states []sink.SinkState
		if st := from.operator(op.UID); st != nil {
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
		if err := sink.Recover(file, states); err != nil {
			return fmt.Errorf("exec: recovering the sink %q (uid %s): %w", op.Name, op.UID, err)
		}
	}
	return nil
}

// finalCheckpoint is the checkpoint id under which a file sink holds its
// last parts back for the job's end.
const finalCheckpoint = int64(1<<63 - 1)

// snapshotState precommits what the sink wrote before the barrier.
func (s *sinkProc) snapshotState(_ context.Context, target checkpointTarget, _ emitFunc, st *SubtaskState) error {
	state, err := s.w.PreCommit(target.id)
	if err != nil {
		return err
	}
	if !s.file {
		return nil // print and collect keep nothing
	}
	st.Sink, err = json.Marshal(state)
	return err
}

// notifyComplete publishes the parts of every checkpoint up to id.
func (s *sinkProc) notifyComplete(id int64) error { return s.w.Commit(id) }
