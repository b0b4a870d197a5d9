package task

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/flinkgo/flinkgo/runtime/checkpoint"
	"github.com/flinkgo/flinkgo/runtime/connector"
)

// A source task saves its reader's split positions in a snapshot; package
// operators' source kind restores them. Every other operator saves its own
// state (operator.Operator.SnapshotState).

// positioned is a source reader whose position a checkpoint holds.
type positioned interface {
	Snapshot() ([]connector.SplitState, error)
}

// snapshotSource records the source's position in st, for checkpoint id.
func (t *Task) snapshotSource(st *checkpoint.SubtaskState, id int64) error {
	r, ok := t.reader.(positioned)
	if !ok {
		return fmt.Errorf("the source cannot be checkpointed")
	}
	splits, err := r.Snapshot()
	if err != nil {
		return err
	}
	if st.Source, err = json.Marshal(splits); err != nil {
		return err
	}
	if l, ok := t.reader.(connector.CheckpointListener); ok {
		l.CheckpointTaken(id)
	}
	return nil
}

// waitSource waits, after the reader said it has no data now, until it may
// have (connector.Waiter.Available), a barrier request or completion comes,
// a chained operator's time trigger is due, or ctx ends.
func (t *Task) waitSource(ctx context.Context) error {
	w, ok := t.reader.(connector.Waiter)
	if !ok {
		return fmt.Errorf("the source returned %w but cannot be waited on", connector.ErrNoData)
	}
	var due <-chan time.Time
	if at, ok := t.deadline(); ok {
		timer := time.NewTimer(time.Until(at))
		defer timer.Stop()
		due = timer.C
	}
	select {
	case <-w.Available():
	case <-t.signal:
	case <-due:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	return nil
}
