package task

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/runtime/metrics"
	"github.com/flinkgo/flinkgo/runtime/partition"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/runtime/watermark"
)

// message is what travels on an inbox from one of its producers: a batch
// of input `input`, a checkpoint barrier, a watermark or a watermark
// status, or the end of the producer's stream.
type message struct {
	input    int
	producer int               // the producer's index among the inbox's
	batch    arrow.RecordBatch // nil for a control message or the end of stream
	barrier  int64             // > 0: the barrier of this checkpoint
	event    eventKind
	wm       watermark.Watermark // of a watermark event
	status   watermark.Status    // of a status event
	// overtook is, for a barrier queued with priority (an unaligned
	// checkpoint's), how many batches queued before it it overtook.
	overtook int
}

// eventKind says whether a message carries a watermark or a status.
type eventKind uint8

const (
	noEvent eventKind = iota
	watermarkEvent
	statusEvent
)

func (m message) isEnd() bool { return m.batch == nil && m.barrier == 0 && m.event == noEvent }

// output sends one subtask's batches along one edge: its partitioner picks
// channels among the consumer subtasks this producer is connected to.
type output struct {
	part    partition.Partitioner
	targets []*inbox
	// producer is this subtask's index among each target's producers.
	producer []int
	input    int // the edge's index among the consumer's inputs
	// from is the producer's output the edge carries (plan.Edge.FromOutput).
	from int
}

// outputs is a subtask's fan-out over all its out edges.
type outputs []*output

// emit sends b along every out edge of the producer's output `from`; it
// takes ownership of b. tm counts what leaves, and the time a full inbox
// blocks the send as back-pressured. Control messages go along every edge.
func (outs outputs) emit(ctx context.Context, from int, b arrow.RecordBatch, tm *metrics.Task) error {
	defer b.Release()
	for _, o := range outs {
		if o.from != from {
			continue
		}
		parts, err := o.part.Split(b)
		if err != nil {
			return err
		}
		for i, p := range parts {
			tm.AddOut(p.Batch)
			m := message{input: o.input, producer: o.producer[p.Channel], batch: p.Batch}
			target := o.targets[p.Channel]
			if target.tryPut(m) {
				continue
			}
			blocked := time.Now()
			if err := target.put(ctx, m); err != nil {
				partition.ReleaseParts(parts[i+1:])
				return err
			}
			metrics.Since(&tm.BackPressured, blocked)
		}
	}
	return nil
}

// end tells every connected consumer that this producer is done.
func (outs outputs) end(ctx context.Context) error { return outs.broadcast(ctx, 0) }

// barrier sends the barrier of checkpoint id to every connected consumer:
// after every batch sent before it, or, unaligned, ahead of the batches
// still queued (inbox.putPriority), without waiting.
func (outs outputs) barrier(ctx context.Context, id int64, unaligned bool) error {
	if !unaligned {
		return outs.broadcast(ctx, id)
	}
	for _, o := range outs {
		for i, t := range o.targets {
			t.putPriority(message{barrier: id, input: o.input, producer: o.producer[i]})
		}
	}
	return nil
}

func (outs outputs) broadcast(ctx context.Context, barrier int64) error {
	return outs.send(ctx, message{barrier: barrier})
}

// watermark sends wm to every connected consumer (every channel of every
// edge, whatever its partitioning), after every batch sent before it.
func (outs outputs) watermark(ctx context.Context, wm watermark.Watermark) error {
	return outs.send(ctx, message{event: watermarkEvent, wm: wm})
}

// status sends a watermark status to every connected consumer.
func (outs outputs) status(ctx context.Context, s watermark.Status) error {
	return outs.send(ctx, message{event: statusEvent, status: s})
}

// send sends a copy of the control message m to every connected consumer.
func (outs outputs) send(ctx context.Context, m message) error {
	for _, o := range outs {
		for i, t := range o.targets {
			m.input, m.producer = o.input, o.producer[i]
			if err := t.put(ctx, m); err != nil {
				return err
			}
		}
	}
	return nil
}

// partitionKind maps the plan's partitioning to a partitioner.
func partitionKind(k plan.Partitioning) (partition.Kind, error) {
	switch k {
	case plan.PartitionForward, plan.PartitionUnset:
		return partition.Forward, nil
	case plan.PartitionRebalance:
		return partition.Rebalance, nil
	case plan.PartitionRescale:
		return partition.Rescale, nil
	case plan.PartitionShuffle:
		return partition.Shuffle, nil
	case plan.PartitionBroadcast:
		return partition.Broadcast, nil
	case plan.PartitionGlobal:
		return partition.Global, nil
	case plan.PartitionHash:
		return partition.Hash, nil
	}
	return 0, fmt.Errorf("unknown partitioning %s", k)
}

// wire builds every subtask's inbox and the outputs of every edge between
// chains (an operator chained to its input has an inbox that stays empty).
func wire(g *plan.Graph, schemas []*arrow.Schema, capacity int, mem memory.Allocator) ([][]*inbox, [][]outputs, error) {
	inboxes := make([][]*inbox, len(g.Operators))
	outs := make([][]outputs, len(g.Operators))
	for _, op := range g.Operators {
		inboxes[op.ID] = make([]*inbox, op.Parallelism)
		for i := range inboxes[op.ID] {
			inboxes[op.ID][i] = newInbox(capacity)
		}
		outs[op.ID] = make([]outputs, op.Parallelism)
	}
	for _, to := range g.Operators {
		if isChained(g, to.ID) {
			continue // batches reach it by function call, not on an edge
		}
		for input, e := range g.Inputs(to.ID) {
			from := g.Operators[e.From]
			kind, err := partitionKind(e.Partitioning)
			if err != nil {
				return nil, nil, err
			}
			p, q := from.Parallelism, to.Parallelism
			var keys []int
			for _, k := range e.Keys {
				schema := g.EdgeSchema(e, schemas)
				idx := schema.FieldIndices(k)
				if len(idx) == 0 {
					return nil, nil, fmt.Errorf("key %q of the edge into %q is not a column of %q (%s)", k, to.Name, from.Name, schema)
				}
				keys = append(keys, idx[0])
			}
			for j := range p {
				channels := partition.Outputs(kind, p, q, j)
				part, err := partition.New(kind, partition.Config{
					NumChannels:    len(channels),
					KeyColumns:     keys,
					MaxParallelism: g.MaxParallelism,
					Rand:           rand.New(rand.NewPCG(uint64(e.From)<<32|uint64(j), uint64(e.To))),
					Allocator:      mem,
				})
				if err != nil {
					return nil, nil, fmt.Errorf("edge %q → %q: %w", from.Name, to.Name, err)
				}
				o := &output{part: part, input: input, from: e.FromOutput}
				for _, c := range channels {
					target := inboxes[to.ID][c]
					o.targets = append(o.targets, target)
					o.producer = append(o.producer, target.connect())
				}
				outs[from.ID][j] = append(outs[from.ID][j], o)
			}
		}
	}
	return inboxes, outs, nil
}
