package task

import (
	"context"

	"github.com/flinkgo/flinkgo/runtime/checkpoint"
	"github.com/flinkgo/flinkgo/runtime/connector"
)

// Checkpoint barriers travel in-band, after the batches before them, as
// Flink's aligned checkpoints (unaligned ones further down): a source task sends the barrier of
// checkpoint n when the coordinator asks (between two batches, after
// recording its position); a task with several producers waits for the
// barrier of n from every producer still running, reading nothing more
// from a producer that delivered it (alignment: that producer's queue in
// the inbox fills and the producer blocks, so what the task holds is
// bounded by the inbox's capacity, as Flink's blocked input channels),
// then snapshots its
// operators in chain order (a UDF finishes its bundle first, emitting its
// results before the barrier, as docs/semantics.md#bundles says), forwards the barrier on
// every edge leaving its chain, and acknowledges to the coordinator.
//
// An unaligned checkpoint (Flink's FLIP-76, Target.Unaligned) is the same
// but for three things: a barrier is queued ahead of the batches its
// producer has queued (inbox.putPriority), so that it reaches the task
// without waiting for the backlog; the task snapshots at the first
// barrier of the checkpoint and forwards it at once, reading every
// producer as usual; and it records as channel state (channelstate.go),
// per producer, the batches sent before that producer's barrier that it
// had not processed when it snapshotted, written next to its state when
// every barrier came, and replayed first on a restore.

// alignment is a task's progress towards a barrier from every producer.
type alignment struct {
	id int64 // 0: not aligning
	// arrived marks the producers whose barrier came: for an aligned
	// checkpoint, the task reads nothing more from them until the
	// alignment ends. Nil when not aligning.
	arrived []bool
	// unaligned: the operators were snapshotted at the first barrier
	// (persisted carries their acknowledgement once their asynchronous
	// parts are written); channels holds, per producer, the batches sent
	// before its barrier that the task had not processed then.
	unaligned bool
	target    checkpoint.Target
	channels  []channelState
	persisted chan checkpoint.Ack
}

// RequestBarrier asks a source task to send checkpoint id's barrier.
// Safe from any goroutine; a newer request replaces an older one.
func (t *Task) RequestBarrier(id int64) {
	t.barrierRequest.Store(id)
	t.wake()
}

// NotifyComplete tells the task checkpoint id completed. Safe from any
// goroutine.
func (t *Task) NotifyComplete(id int64) {
	t.completed.Store(id)
	t.wake()
}

// IsSource reports whether the task reads a source.
func (t *Task) IsSource() bool { return t.reader != nil }

// StopSource makes a source task read nothing more (a stop with
// savepoint). Safe from any goroutine.
func (t *Task) StopSource() { t.stopping.Store(true) }

// EndSource makes a source task end its stream before its next batch, as
// at the end of its data, so that everything downstream finishes (a limit
// has passed its rows). Safe from any goroutine.
func (t *Task) EndSource() {
	t.ending.Store(true)
	t.wake()
}

// Finished reports whether the task has finished its input. Safe from any
// goroutine.
func (t *Task) Finished() bool { return t.finished.Load() }

// CommittedUpTo is the latest checkpoint completion the task has acted on.
// Safe from any goroutine.
func (t *Task) CommittedUpTo() int64 { return t.committedUpTo.Load() }

// SetCoordinator gives the task its attempt's checkpoint coordinator,
// before Run.
func (t *Task) SetCoordinator(c Coordinator) { t.coord = c }

func (t *Task) wake() {
	select {
	case t.signal <- struct{}{}:
	default:
	}
}

// onSignal acts on barrier requests and completions that came since the
// last call. Task goroutine only.
func (t *Task) onSignal(ctx context.Context) error {
	if id := t.barrierRequest.Load(); t.reader != nil && id > t.lastBarrier {
		t.lastBarrier = id
		if err := t.checkpoint(ctx, id); err != nil {
			return err
		}
	}
	if id := t.completed.Load(); id > t.committed {
		t.committed = id
		if l, ok := t.reader.(connector.CheckpointListener); ok {
			l.CheckpointComplete(id)
		}
		for _, l := range t.links {
			if l.proc != nil {
				if err := l.call(func() error { return l.proc.NotifyCheckpointComplete(id) }); err != nil {
					return err
				}
			}
		}
		t.committedUpTo.Store(id)
	}
	if t.reader != nil && t.stopping.Load() {
		// Stopped with a savepoint: read nothing more, and wait for the
		// coordinator to end the attempt.
		<-ctx.Done()
		return context.Cause(ctx)
	}
	return nil
}

// handle takes one message from the inbox.
func (t *Task) handle(ctx context.Context, m message) error {
	switch {
	case m.isEnd():
		t.ended[m.producer] = true
		t.endedCount++
		return t.checkAligned(ctx)
	case m.barrier > 0:
		return t.onBarrier(ctx, m)
	case m.event != noEvent:
		return t.onEvent(ctx, m)
	}
	t.record(m)
	t.metrics.AddIn(m.batch)
	err := t.head.process(ctx, m.input, m.batch)
	m.batch.Release()
	return err
}

func (t *Task) onBarrier(ctx context.Context, m message) error {
	if t.align.id > 0 && m.barrier == t.align.id {
		return t.arrive(ctx, m)
	}
	if m.barrier <= t.lastBarrier || (t.align.id > 0 && m.barrier < t.align.id) {
		return nil // the barrier of a checkpoint this task gave up
	}
	if t.align.id > 0 {
		// A newer checkpoint started: the older one cannot complete
		// any more (the coordinator aborted it); stop aligning for it.
		t.align.release()
		t.align = alignment{}
	}
	t.align = alignment{id: m.barrier, arrived: make([]bool, t.in.producers)}
	if target, ok := t.coord.Target(m.barrier); ok && target.Unaligned {
		// Unaligned: snapshot at the first barrier and forward it at once;
		// what the other channels deliver before their barriers is
		// recorded as channel state, and processed as usual.
		t.lastBarrier = m.barrier
		snap, err := t.snapshot(ctx, m.barrier, target)
		if err != nil {
			return err
		}
		t.align.unaligned, t.align.target = true, target
		t.align.channels = make([]channelState, t.in.producers)
		persisted := make(chan checkpoint.Ack, 1)
		t.align.persisted = persisted
		t.persisting.Go(func() { persisted <- t.persist(ctx, snap) })
	}
	return t.arrive(ctx, m)
}

// arrive marks m's producer as past the barrier being aligned; the
// batches an unaligned barrier overtook are channel state.
func (t *Task) arrive(ctx context.Context, m message) error {
	t.align.arrived[m.producer] = true
	if t.align.unaligned && m.overtook > 0 {
		t.align.channels[m.producer].add(m.input, t.in.overtaken(m.producer, m.overtook)...)
	}
	return t.checkAligned(ctx)
}

// record keeps a retained b as channel state when it came, during an
// unaligned checkpoint, from a producer whose barrier has not come yet.
func (t *Task) record(m message) {
	if t.align.unaligned && !t.align.arrived[m.producer] {
		m.batch.Retain()
		t.align.channels[m.producer].add(m.input, m.batch)
	}
}

// blocked is the producers not to read from: those past the barrier of an
// aligned checkpoint (nil: none).
func (t *Task) blocked() []bool {
	if t.align.unaligned {
		return nil
	}
	return t.align.arrived
}

// checkAligned snapshots when every producer still running has sent the
// barrier being aligned (an unaligned checkpoint's snapshot was taken at
// its first barrier: its channel state is complete then).
func (t *Task) checkAligned(ctx context.Context) error {
	if t.align.id == 0 {
		return nil
	}
	for p, arrived := range t.align.arrived {
		if !arrived && !t.ended[p] {
			return nil
		}
	}
	a := t.align
	t.align = alignment{}
	if a.unaligned {
		t.persisting.Go(func() { _ = t.coord.Acknowledge(ctx, t.withChannelState(ctx, a)) })
		return nil
	}
	t.lastBarrier = a.id
	return t.checkpoint(ctx, a.id)
}

// checkpoint snapshots the chain's operators for checkpoint id, forwards
// the barrier and acknowledges, at once or when the asynchronous parts of
// the snapshots are written out.
func (t *Task) checkpoint(ctx context.Context, id int64) error {
	target, ok := t.coord.Target(id)
	if !ok {
		// The coordinator gave the checkpoint up (it expired, say): pass
		// the barrier on, so that downstream alignments end, and take
		// nothing.
		for _, l := range t.links {
			if err := l.outs.barrier(ctx, id, false); err != nil {
				return err
			}
		}
		return nil
	}
	snap, err := t.snapshot(ctx, id, target)
	if err != nil {
		return err
	}
	send := func(a checkpoint.Ack) error { return t.coord.Acknowledge(ctx, a) }
	for _, o := range snap.states {
		if o.persist != nil {
			// The task goes on; Release waits for this goroutine.
			t.persisting.Go(func() { _ = send(t.persist(ctx, snap)) })
			return nil
		}
	}
	return send(t.persist(ctx, snap))
}

// chainSnapshot is the states the chain's operators took for checkpoint
// id, before their asynchronous parts ran.
type chainSnapshot struct {
	id     int64
	states []*operatorState
}

type operatorState struct {
	link    *link
	st      checkpoint.SubtaskState
	persist func(context.Context, *checkpoint.SubtaskState) error
}

// snapshot snapshots the chain's operators in chain order and forwards the
// barrier of id on every edge leaving the chain (ahead of the batches
// queued there when the checkpoint is unaligned).
func (t *Task) snapshot(ctx context.Context, id int64, target checkpoint.Target) (*chainSnapshot, error) {
	snap := &chainSnapshot{id: id, states: make([]*operatorState, 0, len(t.links))}
	for _, l := range t.links {
		o := &operatorState{link: l, st: checkpoint.SubtaskState{Subtask: t.subtask}}
		if l.op == t.head.op && t.reader != nil {
			if err := t.snapshotSource(&o.st, id); err != nil {
				return nil, l.named(err)
			}
		}
		if l.proc != nil {
			if err := l.call(func() error { return l.proc.SnapshotState(ctx, target, l.emit, &o.st) }); err != nil {
				return nil, err
			}
			o.persist = l.proc.TakePersist()
		}
		snap.states = append(snap.states, o)
	}
	for _, l := range t.links {
		if err := l.outs.barrier(ctx, id, target.Unaligned); err != nil {
			return nil, err
		}
	}
	return snap, nil
}

// persist runs the asynchronous parts of snap's operator snapshots and
// returns the task's acknowledgement.
func (t *Task) persist(ctx context.Context, snap *chainSnapshot) (a checkpoint.Ack) {
	a = checkpoint.Ack{ID: snap.id, Task: t, States: map[string]checkpoint.SubtaskState{}}
	for _, o := range snap.states {
		if o.persist != nil {
			if err := persistGuarded(ctx, o.persist, &o.st); err != nil {
				a.Err = o.link.named(err)
				return a
			}
		}
		if !o.st.Empty() {
			a.States[o.link.op.UID] = o.st
		}
	}
	return a
}

// persistGuarded runs an operator's persist step (on its own goroutine
// when the task goes on meanwhile) with a panic as its error.
func persistGuarded(ctx context.Context, persist func(context.Context, *checkpoint.SubtaskState) error, st *checkpoint.SubtaskState) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = PanicError(r)
		}
	}()
	return persist(ctx, st)
}
