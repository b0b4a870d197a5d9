package collect

import (
	"fmt"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/internal/arrowipc"
	"github.com/flinkgo/flinkgo/runtime/connector"
)

// collectWriter is at-least-once: batches are handed over at Write, or,
// with cfg.CollectBatchBytes, gathered and handed over as one batch once
// they reach that size, at PreCommit (so that every row before a barrier
// has left when its checkpoint completes: a restore does not replay them)
// and at Close. Abort drops the gathered rows: they came after the last
// barrier, so a restore replays them.
//
// Large batches are what makes collect() fast: every batch handed over
// costs a message to the client and a batch there, whatever its size.
type collectWriter struct {
	cfg connector.WriterConfig
	mem memory.Allocator

	mu      sync.Mutex
	pending []arrow.RecordBatch // retained; one schema
	bytes   int
	closed  bool
}

func newCollectWriter(cfg connector.WriterConfig) *collectWriter {
	mem := cfg.Allocator
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	return &collectWriter{cfg: cfg, mem: mem}
}

func (w *collectWriter) Write(b arrow.RecordBatch) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return connector.ErrClosed
	}
	if w.cfg.CollectBatchBytes <= 0 {
		b.Retain()
		return w.cfg.Collect(w.cfg.Subtask, b)
	}
	if b.NumRows() == 0 {
		return nil
	}
	if len(w.pending) > 0 && !w.pending[0].Schema().Equal(b.Schema()) {
		if err := w.flush(); err != nil {
			return err
		}
	}
	b.Retain()
	w.pending = append(w.pending, b)
	w.bytes += arrowipc.BatchBytes(b)
	if w.bytes >= w.cfg.CollectBatchBytes {
		return w.flush()
	}
	return nil
}

// flush hands the gathered batches over as one. Called with mu held.
func (w *collectWriter) flush() error {
	pending := w.pending
	w.pending, w.bytes = nil, 0
	switch len(pending) {
	case 0:
		return nil
	case 1:
		return w.cfg.Collect(w.cfg.Subtask, pending[0])
	}
	joined, err := concatBatches(pending, w.mem)
	for _, b := range pending {
		b.Release()
	}
	if err != nil {
		return fmt.Errorf("collect: joining %d batches: %w", len(pending), err)
	}
	return w.cfg.Collect(w.cfg.Subtask, joined)
}

func (w *collectWriter) PreCommit(int64) ([]byte, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil, connector.ErrClosed
	}
	return nil, w.flush()
}

func (w *collectWriter) Commit(int64) error { return nil }

func (w *collectWriter) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	return w.flush()
}

func (w *collectWriter) Abort() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	for _, b := range w.pending {
		b.Release()
	}
	w.pending, w.bytes = nil, 0
}

// concatBatches joins batches of one schema into one batch, in order.
func concatBatches(batches []arrow.RecordBatch, mem memory.Allocator) (arrow.RecordBatch, error) {
	schema := batches[0].Schema()
	cols := make([]arrow.Array, schema.NumFields())
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	parts := make([]arrow.Array, len(batches))
	rows := int64(0)
	for _, b := range batches {
		rows += b.NumRows()
	}
	for i := range cols {
		for j, b := range batches {
			parts[j] = b.Column(i)
		}
		c, err := array.Concatenate(parts, mem)
		if err != nil {
			return nil, fmt.Errorf("column %q: %w", schema.Field(i).Name, err)
		}
		cols[i] = c
	}
	return array.NewRecordBatch(schema, cols, rows), nil
}
