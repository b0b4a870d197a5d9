package operators

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/runtime/checkpoint"
	"github.com/flinkgo/flinkgo/runtime/operator"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/state"
)

// Duplicates within a batch, across batches, and of keys a checkpoint moved
// out of memory into the backend are all dropped; the first row of each key
// goes out whole.
func TestDropDuplicatesAcrossBatchesAndCheckpoints(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ctx := compute.WithAllocator(context.Background(), mem)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "v", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	c := &operator.Context{
		Op: &plan.Operator{Name: "dedup", UID: "dedup", Kind: plan.KindDropDuplicates,
			Node: &plan.Node{Kind: plan.KindDropDuplicates, DropDuplicates: &plan.DropDuplicates{Subset: []string{"k"}}}},
		Parallelism: 1, MaxParallelism: 128, In: []*arrow.Schema{schema}, Out: schema, Allocator: mem,
		Keyed: &operator.KeyedContext{KeyGroups: state.KeyGroupRange{Start: 0, End: 127}, StateDir: t.TempDir()},
	}
	// A cache of one key: the checkpoint forgets the keys from memory.
	op, err := dropDuplicatesKind(Options{KeyedCacheGroups: 1}).New(c)
	if err != nil {
		t.Fatal(err)
	}
	defer op.Release()
	batch := func(keys []string, valid []bool, vals []int64) arrow.RecordBatch {
		b := array.NewRecordBuilder(mem, schema)
		defer b.Release()
		b.Field(0).(*array.StringBuilder).AppendValues(keys, valid)
		b.Field(1).(*array.Int64Builder).AppendValues(vals, nil)
		return b.NewRecordBatch()
	}
	var got []int64
	emit := func(_ context.Context, b arrow.RecordBatch) error {
		defer b.Release()
		got = append(got, b.Column(1).(*array.Int64).Int64Values()...)
		return nil
	}
	process := func(b arrow.RecordBatch) {
		defer b.Release()
		if err := op.Process(ctx, 0, b, emit); err != nil {
			t.Fatal(err)
		}
	}
	process(batch([]string{"a", "b", "a", "", ""}, []bool{true, true, true, false, false}, []int64{1, 2, 3, 4, 5}))
	process(batch([]string{"b", "c"}, nil, []int64{6, 7}))
	storage := state.Storage{Root: t.TempDir()}
	if err := storage.Init(); err != nil {
		t.Fatal(err)
	}
	if err := op.SnapshotState(ctx, checkpoint.Target{ID: 1, Dir: storage.Root}, emit, &checkpoint.SubtaskState{}); err != nil {
		t.Fatal(err)
	}
	st := &checkpoint.SubtaskState{}
	if err := op.TakePersist()(ctx, st); err != nil || st.Keyed == nil {
		t.Fatalf("persist: %v, state %s", err, st.Keyed)
	}
	process(batch([]string{"c", "a", "d", "", "d"}, []bool{true, true, true, false, true}, []int64{8, 9, 10, 11, 12}))
	want := []int64{1, 2, 4, 7, 10}
	if len(got) != len(want) {
		t.Fatalf("kept %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("kept %v, want %v", got, want)
		}
	}
}
