package source

import (
	"context"
	"fmt"
	"io"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flinkgo/flinkgo/internal/arrowipc"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
)

// arrowReader serves this subtask's ranges of a table shipped in the plan.
type arrowReader struct {
	cfg    Config
	ranges *RowRanges
	// The table's record batches that hold rows left to read (others are
	// released), and the table row each starts at.
	batches []arrow.RecordBatch
	starts  []int64
}

func openArrow(src *planpb.ArrowSource, cfg Config, restore map[string]SplitState) (Reader, error) {
	// The table comes from a client: validated in full before any row is
	// read, so crafted buffers fail the job here, never panic a reader.
	schema, batches, err := arrowipc.DecodeStream(src.GetIpc(), cfg.Allocator)
	if err != nil {
		return nil, fmt.Errorf("source: the in-memory table in the plan: %w", err)
	}
	out := &arrowReader{cfg: cfg}
	if !schema.Equal(cfg.Schema) {
		out.batches = batches
		out.Close()
		return nil, fmt.Errorf("source: the in-memory table's schema %s differs from the node's %s", schema, cfg.Schema)
	}
	var n int64
	for _, b := range batches {
		if b.NumRows() == 0 {
			b.Release()
			continue
		}
		out.batches = append(out.batches, b)
		out.starts = append(out.starts, n)
		n += b.NumRows()
	}
	if out.ranges, err = SplitRows(n, cfg, restore); err != nil {
		out.Close()
		return nil, err
	}
	// Keep only the batches with rows left to read.
	kept := 0
	for i, b := range out.batches {
		start, end := out.starts[i], out.starts[i]+b.NumRows()
		left := false
		for _, rr := range out.ranges.r {
			left = left || (rr.pos < end && start < rr.end)
		}
		if !left {
			b.Release()
			continue
		}
		out.batches[kept], out.starts[kept] = b, start
		kept++
	}
	clear(out.batches[kept:])
	out.batches, out.starts = out.batches[:kept], out.starts[:kept]
	return out, nil
}

func (r *arrowReader) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if err := ctx.Err(); err != nil {
		return nil, context.Cause(ctx)
	}
	if len(r.batches) == 0 { // read, or closed
		return nil, io.EOF
	}
	var at int // the batch holding the rows
	a, b, last, ok := r.ranges.Peek(func(a int64) int64 {
		at = sort.Search(len(r.starts), func(i int) bool { return r.starts[i] > a }) - 1
		return min(int64(r.cfg.BatchRows), r.starts[at]+r.batches[at].NumRows()-a)
	})
	if !ok {
		return nil, io.EOF
	}
	r.ranges.Commit(b, last)
	return r.batches[at].NewSlice(a-r.starts[at], b-r.starts[at]), nil
}

// Snapshot returns the position of the reader's ranges.
func (r *arrowReader) Snapshot() ([]SplitState, error) { return r.ranges.Snapshot(), nil }

func (r *arrowReader) Close() error {
	for _, b := range r.batches {
		b.Release()
	}
	r.batches, r.starts = nil, nil
	return nil
}
