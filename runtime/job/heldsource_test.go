package job

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/internal/poll"
	"github.com/flinkgo/flinkgo/runtime/operator"
	"github.com/flinkgo/flinkgo/runtime/operators"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/runtime/source"
)

// heldSources is a registry (operators.Registry(opts) otherwise) whose
// source subtasks stop handing over rows once they have read `after` rows
// and then idle, as an unbounded source with no data yet, until the job
// ends: they never finish. A savepoint of such a job always finds its
// sources running (a bounded source can reach its end first on a loaded
// machine: "some tasks have already finished"), and the rows after `after`
// are left for the job restored from it. held counts the subtasks holding.
func heldSources(t *testing.T, opts operators.Options, after int64) (reg *operator.Registry, held *atomic.Int64) {
	t.Helper()
	base := operators.Registry(opts)
	src, err := base.Lookup(plan.KindSource)
	if err != nil {
		t.Fatal(err)
	}
	held = &atomic.Int64{}
	src.OpenSource = func(open func(*operator.Context) (source.Reader, error)) func(*operator.Context) (source.Reader, error) {
		return func(c *operator.Context) (source.Reader, error) {
			r, err := open(c)
			if err != nil {
				return nil, err
			}
			return &heldReader{Reader: r, after: after, schema: c.Out, mem: c.Allocator, held: held}, nil
		}
	}(src.OpenSource)
	reg, err = base.With(src)
	if err != nil {
		t.Fatal(err)
	}
	return reg, held
}

// heldReader is a source.Reader that reads nothing more once it has read
// `after` rows.
type heldReader struct {
	source.Reader
	after, read int64
	schema      *arrow.Schema
	mem         memory.Allocator
	held        *atomic.Int64
	holding     bool
}

// heldIdle is how long a held reader's Next waits before it returns an
// empty batch: the task sends barriers between batches, so Next must
// return for checkpoints to go on.
const heldIdle = 5 * time.Millisecond

func (r *heldReader) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if r.read < r.after {
		b, err := r.Reader.Next(ctx)
		if err == nil {
			r.read += b.NumRows()
		}
		return b, err
	}
	if !r.holding {
		r.holding = true
		r.held.Add(1)
	}
	idle := time.NewTimer(heldIdle)
	defer idle.Stop()
	select {
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	case <-idle.C:
	}
	empty := array.NewRecordBuilder(r.mem, r.schema)
	defer empty.Release()
	return empty.NewRecordBatch(), nil
}

// waitHeld waits until n source subtasks of j hold (heldSources), failing
// if j ends first.
func waitHeld(t *testing.T, j *Job, held *atomic.Int64, n int64) {
	t.Helper()
	allHeld := func() bool {
		select {
		case <-j.Done():
			_, err := j.Wait()
			t.Fatalf("the job ended (%v) before %d sources held", err, n)
		default:
		}
		return held.Load() >= n
	}
	if !poll.Within(30*time.Second, allHeld) { // hang guard
		t.Fatalf("%d of %d sources hold after 30 s", held.Load(), n)
	}
}
