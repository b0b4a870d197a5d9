package task

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flinkgo/flinkgo/runtime/checkpoint"
)

// channelState is one producer's batches in an unaligned checkpoint: those
// it sent before its barrier that the task had not processed when it
// snapshotted its operators.
type channelState struct {
	input   int
	batches []arrow.RecordBatch
}

func (c *channelState) add(input int, batches ...arrow.RecordBatch) {
	c.input = input
	c.batches = append(c.batches, batches...)
}

// release frees the batches an alignment recorded as channel state.
func (a *alignment) release() {
	for i := range a.channels {
		for _, b := range a.channels[i].batches {
			b.Release()
		}
		a.channels[i].batches = nil
	}
}

// withChannelState waits for the operators' part of the unaligned
// checkpoint a and adds the channel state to it, written into the
// checkpoint's storage, as the state of the chain's head. It frees the
// batches recorded. Off the task goroutine.
func (t *Task) withChannelState(ctx context.Context, a alignment) checkpoint.Ack {
	defer a.release()
	var ack checkpoint.Ack
	select {
	case ack = <-a.persisted:
	case <-ctx.Done():
		return checkpoint.Ack{ID: a.id, Task: t, Err: context.Cause(ctx)}
	}
	if ack.Err != nil {
		return ack
	}
	inputs := &checkpoint.InputChannels{Producers: t.in.producers}
	for p, ch := range a.channels {
		if len(ch.batches) == 0 {
			continue
		}
		cs, err := checkpoint.WriteChannel(ctx, a.target.Dir, a.id, t.head.op.UID, t.subtask, p, ch.input, ch.batches)
		if err != nil {
			ack.Err = t.head.named(err)
			return ack
		}
		inputs.Channels = append(inputs.Channels, cs)
	}
	if len(inputs.Channels) > 0 {
		st := ack.States[t.head.op.UID]
		st.Subtask, st.Inputs = t.subtask, inputs
		ack.States[t.head.op.UID] = st
	}
	return ack
}

// errRescaleChannelState is the error of a restore that changes the
// parallelism around an operator whose checkpoint holds channel state.
func errRescaleChannelState(id int64, op string, uid string) error {
	return fmt.Errorf("checkpoint %d is unaligned and holds channel state (batches in flight) of operator %q (uid %s), "+
		"which cannot be restored at a different parallelism: restore at the parallelism it was taken with, "+
		"then take a savepoint (savepoints are always aligned) or stop with a savepoint, and rescale from that", id, op, uid)
}

// restoreChannels queues the channel state the restored snapshot holds
// for this task's inbox, to be processed before any new input.
func (t *Task) restoreChannels(bc *buildContext) error {
	op := t.head.op
	st := bc.From.Operator(op.UID)
	if st == nil {
		return nil
	}
	id := bc.From.Meta.CheckpointID
	for _, sub := range st.Subtasks {
		if sub.Subtask != t.subtask || sub.Inputs == nil {
			continue
		}
		if st.Parallelism != op.Parallelism || sub.Inputs.Producers != t.in.producers {
			return errRescaleChannelState(id, op.Name, op.UID)
		}
		for _, cs := range sub.Inputs.Channels {
			if cs.Producer < 0 || cs.Producer >= t.in.producers {
				return fmt.Errorf("checkpoint %d: channel state of operator %q (uid %s) names producer %d of %d", id, op.Name, op.UID, cs.Producer, t.in.producers)
			}
			batches, err := checkpoint.ReadChannel(context.Background(), bc.From.Base, cs, bc.Allocator)
			if err != nil {
				return fmt.Errorf("checkpoint %d, operator %q (uid %s): %w", id, op.Name, op.UID, err)
			}
			t.in.prefill(cs.Producer, cs.Input, batches)
		}
	}
	return nil
}
