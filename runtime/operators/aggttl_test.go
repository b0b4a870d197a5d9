package operators

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/runtime/checkpoint"
	"github.com/flinkgo/flinkgo/runtime/operator"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/state"
)

// TestKeyedAggregateStateTTL: a key untouched for the TTL (processing
// time) starts from nothing, in memory and after a checkpoint moved it to
// the backend; a key touched within the TTL goes on.
func TestKeyedAggregateStateTTL(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64}, {Name: "v", Type: arrow.PrimitiveTypes.Int64}}, nil)
	node := &plan.Node{Kind: plan.KindKeyedAggregate, KeyedAggregate: &plan.KeyedAggregate{
		Keys: []string{"k"}, Aggregates: []*plan.Aggregate{{Function: "sum", Column: "v", Name: "v"}},
		Emit: plan.EmitUpdates, StateTTLMs: time.Hour.Milliseconds()}}
	op := &plan.Operator{Name: "agg", UID: "agg", Kind: plan.KindKeyedAggregate, Node: node, EmitUpdates: true}
	now := time.UnixMilli(5_000_000)
	p, err := newAggProc(node, schema, schema, mem, 128, true, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	p.ttl = aggStateTTL(node.KeyedAggregate, Options{}, true)
	p.keyed.clock = func() time.Time { return now }
	c := &operator.Context{Op: op, Parallelism: 1, MaxParallelism: 128, In: []*arrow.Schema{schema}, Out: schema,
		Allocator: mem, Logger: slog.New(slog.DiscardHandler),
		Keyed: &operator.KeyedContext{KeyGroups: state.KeyGroupRange{Start: 0, End: 127}, StateDir: t.TempDir()}}
	if err := p.setupState(context.Background(), c, 0); err != nil {
		t.Fatal(err)
	}
	defer p.Release()
	var got []string
	emit := func(_ context.Context, b arrow.RecordBatch) error {
		defer b.Release()
		k, v := b.Column(0).(*array.Int64), b.Column(1).(*array.Int64)
		for i := range int(b.NumRows()) {
			got = append(got, fmt.Sprintf("%d=%d", k.Value(i), v.Value(i)))
		}
		return nil
	}
	feed := func(rows ...int64) { // k, v pairs
		b := array.NewRecordBuilder(mem, schema)
		defer b.Release()
		for i := 0; i < len(rows); i += 2 {
			b.Field(0).(*array.Int64Builder).Append(rows[i])
			b.Field(1).(*array.Int64Builder).Append(rows[i+1])
		}
		rec := b.NewRecordBatch()
		defer rec.Release()
		if err := p.Process(context.Background(), 0, rec, emit); err != nil {
			t.Fatal(err)
		}
		if err := p.OnTimer(context.Background(), emit); err != nil {
			t.Fatal(err)
		}
	}
	checkpointNow := func(id int64) {
		dir := t.TempDir()
		if err := (state.Storage{Root: dir}).Init(); err != nil {
			t.Fatal(err)
		}
		if err := p.SnapshotState(context.Background(), checkpoint.Target{ID: id, Dir: dir}, emit, &checkpoint.SubtaskState{}); err != nil {
			t.Fatal(err)
		}
		if err := p.TakePersist()(context.Background(), &checkpoint.SubtaskState{}); err != nil {
			t.Fatal(err)
		}
	}
	feed(1, 10, 2, 100)
	now = now.Add(50 * time.Minute)
	feed(1, 1) // key 1 goes on: 11
	now = now.Add(20 * time.Minute)
	feed(2, 5, 1, 1) // key 2 expired (70 min): 5; key 1 (20 min): 12
	checkpointNow(1) // every group now only in the backend
	now = now.Add(30 * time.Minute)
	feed(1, 1) // loaded back: 13
	now = now.Add(61 * time.Minute)
	checkpointNow(2) // both keys expired: dropped
	feed(1, 7, 2, 7)
	want := []string{"1=10", "2=100", "1=11", "1=12", "2=5", "1=13", "1=7", "2=7"} // groups in order of first appearance
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}
