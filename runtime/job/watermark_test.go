package job

import (
	"context"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/runtime/operator"
	"github.com/flinkgo/flinkgo/runtime/operators"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/runtime/watermark"
)

// subtask1Offset puts subtask 1's watermarks far above subtask 0's, so the
// recorder can tell whose watermark it got.
const subtask1Offset = 1_000_000_000

// stampOp (test only, in place of the filter kind) passes its batches on
// and then makes a watermark of the greatest id it has seen (plus
// subtask1Offset on subtask 1), as a watermark assigner would.
type stampOp struct {
	operator.Base
	c   *operator.Context
	max int64
}

func (s *stampOp) Process(ctx context.Context, _ int, b arrow.RecordBatch, emit operator.Emit) error {
	for _, id := range b.Column(0).(*array.Int64).Int64Values() {
		s.max = max(s.max, id)
	}
	b.Retain()
	if err := emit(ctx, b); err != nil {
		return err
	}
	wm := s.max
	if s.c.Subtask == 1 {
		wm += subtask1Offset
	}
	return s.c.Watermarks.EmitWatermark(ctx, watermark.Watermark(wm))
}

// recordOp (test only, in place of the select kind) records the rows and
// watermarks that reach it, in order.
type recordOp struct {
	operator.Base
	mu   *sync.Mutex
	ids  map[int64]bool
	wms  *[]watermark.Watermark
	fail *[]string
}

func (r *recordOp) Process(ctx context.Context, _ int, b arrow.RecordBatch, emit operator.Emit) error {
	r.mu.Lock()
	for _, id := range b.Column(0).(*array.Int64).Int64Values() {
		r.ids[id] = true
	}
	r.mu.Unlock()
	b.Retain()
	return emit(ctx, b)
}

func (r *recordOp) OnWatermark(_ context.Context, wm operator.Watermark, _ operator.Emit) (operator.Watermark, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	*r.wms = append(*r.wms, wm)
	// The row a watermark was made from travelled before it.
	if id := int64(wm) % subtask1Offset; wm != watermark.MaxWatermark && !r.ids[id] {
		*r.fail = append(*r.fail, "watermark "+wm.String()+" arrived before its row")
	}
	return wm, nil
}

// Watermarks travel with the batches through a job of several tasks
// (parallelism 2 → rebalance → 1): the downstream task sees the minimum
// over its producers (subtask 0's, until it ends with the maximum
// watermark), each after the rows before it, growing, and the maximum
// watermark last.
func TestWatermarksTravelThroughTheExchange(t *testing.T) {
	g := datagenToCollect(t, 5000)
	g = replan(t, g, func(j *plan.JobPlan) {
		src, sink := j.Nodes[0], j.Nodes[1]
		stamp := &plan.Node{ID: 3, Name: "stamp", OutputSchema: src.OutputSchema, Inputs: []*plan.Input{{Node: 1}},
			Kind: plan.KindFilter, Filter: &plan.Filter{Predicate: &plan.Literal{Kind: plan.LiteralBool, Bool: true}}}
		record := &plan.Node{ID: 4, Name: "record", OutputSchema: src.OutputSchema, Parallelism: 1,
			Inputs: []*plan.Input{{Node: 3, Partitioning: plan.PartitionRebalance}},
			Kind:   plan.KindSelect, Select: &plan.Select{Columns: []*plan.NamedExpr{{Name: "id", Expr: &plan.Column{Name: "id"}}, {Name: "x", Expr: &plan.Column{Name: "x"}}}}}
		sink.Inputs = []*plan.Input{{Node: 4}}
		sink.Parallelism = 1
		j.Nodes = []*plan.Node{src, stamp, record, sink}
	})
	var (
		mu    sync.Mutex
		wms   []watermark.Watermark
		fails []string
	)
	base := operators.Registry(operators.Options{SourceBatchRows: 50, Collect: func(_ *plan.Operator, _ int, b arrow.RecordBatch) error {
		b.Release()
		return nil
	}})
	reg, err := base.With(
		operator.Kind{Kind: plan.KindFilter, Schema: func(_ *plan.Operator, in []*arrow.Schema) (*arrow.Schema, error) { return in[0], nil },
			New: func(c *operator.Context) (operator.Operator, error) { return &stampOp{c: c}, nil }},
		operator.Kind{Kind: plan.KindSelect, Schema: func(_ *plan.Operator, in []*arrow.Schema) (*arrow.Schema, error) { return in[0], nil },
			New: func(*operator.Context) (operator.Operator, error) {
				return &recordOp{mu: &mu, ids: map[int64]bool{}, wms: &wms, fail: &fails}, nil
			}},
	)
	if err != nil {
		t.Fatal(err)
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	j, err := Start(context.Background(), g, Options{Allocator: mem, Registry: reg, SourceBatchRows: 50, ChannelCapacity: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Wait(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, f := range fails {
		t.Error(f)
	}
	if len(wms) == 0 || wms[len(wms)-1] != watermark.MaxWatermark {
		t.Fatalf("watermarks %v: want the maximum last", wms)
	}
	for i := 1; i < len(wms); i++ {
		if wms[i] <= wms[i-1] {
			t.Fatalf("watermarks %v do not grow at %d", wms, i)
		}
	}
	t.Logf("watermarks at the recorder: %v", wms)
	// The minimum: subtask 1's watermarks (all above subtask 0's) show
	// only once subtask 0 has ended, with the maximum watermark.
	seenHigh := false
	for _, wm := range wms[:len(wms)-1] {
		if wm >= subtask1Offset {
			seenHigh = true
		} else if seenHigh {
			t.Fatalf("watermarks %v: subtask 0's after subtask 1's", wms)
		}
	}
}
