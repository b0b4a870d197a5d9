package partition

import (
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// BenchmarkHashSplit splits by key group a 65536-row batch (large int64
// keys, string payload) into 4 channels, and a 10000-row batch of the
// pipeline benchmark's shape (100 small int64 keys, a float64) into 2.
func BenchmarkHashSplit(b *testing.B) {
	b.Run("rows=65536/string/channels=4", func(b *testing.B) {
		benchHashSplit(b, 65536, 4, func(i int) int64 { return int64(i) * 2654435761 }, arrow.BinaryTypes.String)
	})
	b.Run("rows=10000/float64/channels=2", func(b *testing.B) {
		benchHashSplit(b, 10000, 2, func(i int) int64 { return int64(i % 100) }, arrow.PrimitiveTypes.Float64)
	})
}

func benchHashSplit(b *testing.B, rows, channels int, key func(int) int64, payload arrow.DataType) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(b, 0)
	kb := array.NewInt64Builder(mem)
	vb := array.NewBuilder(mem, payload)
	for i := range rows {
		kb.Append(key(i))
		switch vb := vb.(type) {
		case *array.StringBuilder:
			vb.Append(fmt.Sprintf("payload-%08d", i))
		case *array.Float64Builder:
			vb.Append(float64(i) / 3)
		}
	}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64},
		{Name: "v", Type: payload},
	}, nil)
	k, v := kb.NewArray(), vb.NewArray()
	kb.Release()
	vb.Release()
	batch := array.NewRecordBatch(schema, []arrow.Array{k, v}, int64(rows))
	k.Release()
	v.Release()
	defer batch.Release()

	p, err := New(Hash, Config{NumChannels: channels, KeyColumns: []int{0}, MaxParallelism: 128, Allocator: mem})
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
		if len(parts) != channels {
			b.Fatalf("%d parts, want %d", len(parts), channels)
		}
		ReleaseParts(parts)
	}
	b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}
