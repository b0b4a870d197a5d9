package task

import (
	"context"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/runtime/checkpoint"
	"github.com/flinkgo/flinkgo/runtime/metrics"
	"github.com/flinkgo/flinkgo/runtime/operator"
)

// countingOperator counts the batches it processes.
type countingOperator struct {
	operator.Base
	batches int
}

func (c *countingOperator) Process(context.Context, int, arrow.RecordBatch, operator.Emit) error {
	c.batches++
	return nil
}

// ackCoordinator takes every checkpoint and records the acknowledgements.
type ackCoordinator struct {
	mu   sync.Mutex
	acks []int64
}

func (*ackCoordinator) Target(int64) (checkpoint.Target, bool) { return checkpoint.Target{}, true }
func (c *ackCoordinator) Acknowledge(_ context.Context, a checkpoint.Ack) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.acks = append(c.acks, a.ID)
	return nil
}

// A producer that delivered its barrier is not read until the other's
// comes: it blocks on its full queue instead of the task buffering what it
// sends. The inbox never holds more than its capacity, however much the
// early producer sends meanwhile (with the former unbounded alignment it
// held all 200 batches).
func TestAlignmentBlocksProducersPastTheirBarrier(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	op := &countingOperator{}
	tk := twoProducerTask(op)
	coord := &ackCoordinator{}
	tk.coord = coord
	ctx := context.Background()
	const early = 200
	var batchBytes int64
	// Made here: keyedParts may fail the test, which only its goroutine can.
	var sends []arrow.RecordBatch
	for range early {
		parts := keyedParts(t, mem, 100)
		parts[1].Release()
		sends = append(sends, parts[0])
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = tk.in.put(ctx, message{producer: 0, barrier: 1})
		for _, b := range sends {
			_ = tk.in.put(ctx, message{producer: 0, batch: b})
		}
		_ = tk.in.put(ctx, message{producer: 0})
	}()
	parts := keyedParts(t, mem, 100)
	batchBytes = max(metrics.BatchBytes(parts[0]), metrics.BatchBytes(parts[1]))
	go func() {
		_ = tk.in.put(ctx, message{producer: 1, batch: parts[0]})
		_ = tk.in.put(ctx, message{producer: 1, batch: parts[1]})
		_ = tk.in.put(ctx, message{producer: 1, barrier: 1})
		_ = tk.in.put(ctx, message{producer: 1})
	}()
	if err := tk.Run(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if op.batches != early+2 {
		t.Fatalf("processed %d batches, want %d", op.batches, early+2)
	}
	if len(coord.acks) != 1 || coord.acks[0] != 1 {
		t.Fatalf("acknowledged %v, want checkpoint 1", coord.acks)
	}
	bound := int64(tk.in.perProducer()*tk.in.producers) * batchBytes
	peak := tk.in.peak.Load()
	t.Logf("FIGURES inbox peak %d bytes, bound %d bytes (%d batches of at most %d bytes), early producer sent %d bytes",
		peak, bound, tk.in.perProducer()*tk.in.producers, batchBytes, early*batchBytes)
	if peak > bound {
		t.Fatalf("inbox peaked at %d bytes, above its bound of %d", peak, bound)
	}
}
