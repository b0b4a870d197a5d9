package source

import (
	"bytes"
	"context"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"

	"github.com/flinkgo/flinkgo/udf/proto/planpb"
)

// arrowReader serves this subtask's chunks of a table shipped in the plan.
type arrowReader struct {
	chunks []arrow.RecordBatch
}

func openArrow(src *planpb.ArrowSource, cfg Config) (Reader, error) {
	r, err := ipc.NewReader(bytes.NewReader(src.GetIpc()), ipc.WithAllocator(cfg.Allocator))
	if err != nil {
		return nil, fmt.Errorf("source: the in-memory table is not an Arrow IPC stream: %w", err)
	}
	defer r.Release()
	if !r.Schema().Equal(cfg.Schema) {
		return nil, fmt.Errorf("source: the in-memory table's schema %s differs from the node's %s", r.Schema(), cfg.Schema)
	}
	out := &arrowReader{}
	chunk := 0
	for r.Next() {
		b := r.RecordBatch()
		for off := int64(0); off < b.NumRows(); off += int64(cfg.BatchRows) {
			if chunk%cfg.Parallelism == cfg.Subtask {
				out.chunks = append(out.chunks, b.NewSlice(off, min(off+int64(cfg.BatchRows), b.NumRows())))
			}
			chunk++
		}
	}
	if err := r.Err(); err != nil {
		out.Close()
		return nil, fmt.Errorf("source: reading the in-memory table: %w", err)
	}
	return out, nil
}

func (r *arrowReader) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if err := ctx.Err(); err != nil {
		return nil, context.Cause(ctx)
	}
	if len(r.chunks) == 0 {
		return nil, io.EOF
	}
	b := r.chunks[0]
	r.chunks = r.chunks[1:]
	return b, nil
}

func (r *arrowReader) Close() error {
	for _, b := range r.chunks {
		b.Release()
	}
	r.chunks = nil
	return nil
}
