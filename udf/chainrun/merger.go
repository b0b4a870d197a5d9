package chainrun

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
)

// errSubtaskEnded means a subtask stopped before answering all its input.
var errSubtaskEnded = errors.New("chainrun: subtask ended before answering")

// inputSize tells the merger which subtask got the next input batch and how
// many rows it had.
type inputSize struct {
	subtask int
	rows    int64
}

// merger restores input order: for each input batch, in order, it takes
// that many result rows from the subtask that processed it. Subtasks
// re-batch their input, so result batches are sliced (zero-copy) as needed.
type merger struct {
	subtasks []*subtask
	emit     func(arrow.RecordBatch) error
	sizes    chan inputSize
	// Per subtask: the result being consumed and the rows already taken.
	current []arrow.RecordBatch
	offset  []int64
	// unanswered counts rows of inputs whose results never came.
	unanswered int64
}

func newMerger(subtasks []*subtask, emit func(arrow.RecordBatch) error) *merger {
	return &merger{
		subtasks: subtasks,
		emit:     emit,
		// Sizes are tiny; a deep buffer lets the distributor run ahead.
		sizes:   make(chan inputSize, 1<<14),
		current: make([]arrow.RecordBatch, len(subtasks)),
		offset:  make([]int64, len(subtasks)),
	}
}

func (m *merger) run(ctx context.Context) error {
	for {
		var size inputSize
		var ok bool
		select {
		case size, ok = <-m.sizes:
			if !ok {
				return nil
			}
		case <-ctx.Done():
			return context.Cause(ctx)
		}
		if err := m.take(ctx, size); err != nil {
			if errors.Is(err, errSubtaskEnded) {
				// Rows of later inputs must not be emitted before this
				// input's: stop here. The subtask's own error, if any, is
				// what Run reports.
				return nil
			}
			return err
		}
	}
}

// take emits the results of one input batch.
func (m *merger) take(ctx context.Context, size inputSize) error {
	i, want := size.subtask, size.rows
	for want > 0 {
		if m.current[i] == nil {
			select {
			case b, ok := <-m.subtasks[i].out:
				if !ok {
					m.unanswered += want
					return errSubtaskEnded
				}
				m.current[i], m.offset[i] = b, 0
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		}
		cur := m.current[i]
		n := min(want, cur.NumRows()-m.offset[i])
		var piece arrow.RecordBatch
		if m.offset[i] == 0 && n == cur.NumRows() {
			piece = cur
			m.current[i] = nil
		} else {
			piece = cur.NewSlice(m.offset[i], m.offset[i]+n)
			m.offset[i] += n
			if m.offset[i] == cur.NumRows() {
				cur.Release()
				m.current[i] = nil
			}
		}
		want -= n
		if err := m.emit(piece); err != nil {
			return fmt.Errorf("chainrun: emit: %w", err)
		}
	}
	return nil
}

// release frees results taken but not emitted, and drains the subtasks'
// outputs (they are closed once every subtask has ended).
func (m *merger) release() {
	for i, b := range m.current {
		if b != nil {
			b.Release()
			m.current[i] = nil
		}
	}
	for _, s := range m.subtasks {
		for b := range s.out {
			b.Release()
		}
	}
}

func (m *merger) checkComplete() error {
	if m.unanswered > 0 {
		return fmt.Errorf("%w: %d input rows got no result", errIncomplete, m.unanswered)
	}
	return nil
}
