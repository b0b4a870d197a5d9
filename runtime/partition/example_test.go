package partition_test

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/runtime/partition"
)

// A keyed exchange: each row goes to the consumer subtask that owns its key
// group, and equal keys always meet.
func ExampleNew_hash() {
	mem := memory.NewGoAllocator()
	kb := array.NewStringBuilder(mem)
	kb.AppendValues([]string{"a", "b", "c", "a", "d", "b"}, nil)
	keys := kb.NewArray()
	kb.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "user", Type: arrow.BinaryTypes.String}}, nil)
	batch := array.NewRecordBatch(schema, []arrow.Array{keys}, int64(keys.Len()))
	keys.Release()
	defer batch.Release()

	p, err := partition.New(partition.Hash, partition.Config{NumChannels: 2, KeyColumns: []int{0}, MaxParallelism: 128})
	if err != nil {
		panic(err)
	}
	parts, err := p.Split(batch)
	if err != nil {
		panic(err)
	}
	defer partition.ReleaseParts(parts)
	for _, part := range parts {
		fmt.Println(part.Channel, part.Batch.Column(0))
	}
	// Output:
	// 0 ["b" "c" "d" "b"]
	// 1 ["a" "a"]
}

// Pointwise wiring of 2 producers to 5 consumers, as a rescale edge uses it.
func ExamplePointwiseOutputs() {
	for j := range 2 {
		fmt.Println("producer", j, "feeds", partition.PointwiseOutputs(2, 5, j))
	}
	for i := range 5 {
		fmt.Println("consumer", i, "reads", partition.PointwiseInputs(2, 5, i))
	}
	// Output:
	// producer 0 feeds [0 1 2]
	// producer 1 feeds [3 4]
	// consumer 0 reads [0]
	// consumer 1 reads [0]
	// consumer 2 reads [0]
	// consumer 3 reads [1]
	// consumer 4 reads [1]
}
