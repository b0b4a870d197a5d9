package task

import (
	"encoding/json"
	"fmt"

	"github.com/flinkgo/flinkgo/runtime/checkpoint"
	"github.com/flinkgo/flinkgo/runtime/source"
)

// A source task saves its reader's split positions in a snapshot; package
// operators' source kind restores them. Every other operator saves its own
// state (operator.Operator.SnapshotState).

// positioned is a source reader whose position a checkpoint holds.
type positioned interface {
	Snapshot() ([]source.SplitState, error)
}

// snapshotSource records the source's position in st.
func (t *Task) snapshotSource(st *checkpoint.SubtaskState) error {
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
