package operators

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flinkgo/flinkgo/runtime/operator"
)

// The keyed aggregation's pandas UDAFs (docs/semantics.md#pandas-udafs):
// the planner admits them over a bounded input in final mode only, as
// PyFlink runs pandas UDAFs in group aggregations in batch mode. Each
// group keeps its rows' argument columns (keyed state, as the
// accumulators); the end of input hands every group's rows to the workers,
// many groups per call.

// keepUDAFRows keeps the argument columns of b's rows in their groups.
func (p *aggProc) keepUDAFRows(ctx context.Context, b arrow.RecordBatch, gids []int) error {
	groups := make([]*udafRows, len(gids))
	for row, g := range gids {
		groups[row] = &p.list[g].kept
	}
	return p.udafs.keep(ctx, b, groups)
}

// finishUDAFs computes the UDAFs of every group (all in memory: loadAll),
// emits the groups' rows, and closes the workers.
func (p *aggProc) finishUDAFs(ctx context.Context, emit operator.Emit) error {
	if len(p.list) > 0 {
		groups := make([]*udafRows, len(p.list))
		for i, g := range p.list {
			groups[i] = &g.kept
		}
		udafs, err := p.udafs.evaluate(ctx, groups)
		if err != nil {
			return err
		}
		rows, err := p.finalRows()
		if err == nil && len(rows) != len(p.list) {
			// UDAFs run over append-only input (the planner refuses a
			// changelog), so every group holds rows.
			err = fmt.Errorf("keyed aggregation %q: %d of %d groups hold no rows: pandas UDAFs cannot run over retractions", p.name, len(p.list)-len(rows), len(p.list))
		}
		if err == nil {
			err = p.emitRows(ctx, emit, rows, udafs)
		}
		releaseAll(udafs)
		if err != nil {
			return err
		}
	}
	return p.udafs.close()
}

// Open starts the pandas UDAFs' workers.
func (p *aggProc) Open(ctx context.Context) error {
	if p.udafs == nil {
		return nil
	}
	return p.udafs.open(ctx)
}

// Cancel stops the pandas UDAFs' workers without waiting on them.
func (p *aggProc) Cancel(error) {
	if p.udafs != nil {
		p.udafs.cancel()
	}
}
