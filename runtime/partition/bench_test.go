package partition

import (
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// BenchmarkHashSplit splits a 65536-row batch (int64 key, string payload)
// by key group into 4 channels.
func BenchmarkHashSplit(b *testing.B) {
	const rows = 65536
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(b, 0)
	kb := array.NewInt64Builder(mem)
	vb := array.NewStringBuilder(mem)
	for i := range rows {
		kb.Append(int64(i) * 2654435761)
		vb.Append(fmt.Sprintf("payload-%08d", i))
	}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64},
		{Name: "v", Type: arrow.BinaryTypes.String},
	}, nil)
	k, v := kb.NewArray(), vb.NewArray()
	kb.Release()
	vb.Release()
	batch := array.NewRecordBatch(schema, []arrow.Array{k, v}, rows)
	k.Release()
	v.Release()
	defer batch.Release()

	p, err := New(Hash, Config{NumChannels: 4, KeyColumns: []int{0}, MaxParallelism: 128, Allocator: mem})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		parts, err := p.Split(batch)
		if err != nil {
			b.Fatal(err)
		}
		if len(parts) != 4 {
			b.Fatalf("%d parts, want 4", len(parts))
		}
		ReleaseParts(parts)
	}
	b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}
