package fuzzseeds

import (
	"bytes"
	"math/rand/v2"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/internal/arrowipc"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
)

// TableSchema is the schema of Table: id int64, name string, x float64.
var TableSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "x", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
}, nil)

// Table is an IPC stream of rows rows of TableSchema, in two batches.
func Table(rows int) []byte {
	mem := memory.NewGoAllocator()
	var out bytes.Buffer
	w := ipc.NewWriter(&out, ipc.WithSchema(TableSchema), ipc.WithAllocator(mem))
	for part := range 2 {
		b := array.NewRecordBuilder(mem, TableSchema)
		for i := part * rows / 2; i < (part+1)*rows/2; i++ {
			b.Field(0).(*array.Int64Builder).Append(int64(i))
			b.Field(1).(*array.StringBuilder).Append([]string{"a", "bb", "", "dddd"}[i%4])
			if i%5 == 0 {
				b.Field(2).AppendNull()
			} else {
				b.Field(2).(*array.Float64Builder).Append(float64(i) / 2)
			}
		}
		rec := b.NewRecordBatch()
		b.Release()
		err := w.Write(rec)
		rec.Release()
		if err != nil {
			panic(err) // a bug in this package
		}
	}
	if err := w.Close(); err != nil {
		panic(err)
	}
	return out.Bytes()
}

// CraftedStrings is an IPC stream of TableSchema whose name column's
// offsets go backwards ([0, 6, 3]): pyarrow builds such a table without
// complaint, and reading row 1 slices [6:3].
func CraftedStrings() []byte {
	offsets := memory.NewBufferBytes(arrow.Int32Traits.CastToBytes([]int32{0, 6, 3}))
	values := memory.NewBufferBytes([]byte("abcdef"))
	data := array.NewData(arrow.BinaryTypes.String, 2, []*memory.Buffer{nil, offsets, values}, nil, 0, 0)
	defer data.Release()
	names := array.MakeFromData(data)
	defer names.Release()
	mem := memory.NewGoAllocator()
	ids := array.NewInt64Builder(mem)
	ids.AppendValues([]int64{1, 2}, nil)
	idCol := ids.NewArray()
	ids.Release()
	defer idCol.Release()
	xs := array.NewFloat64Builder(mem)
	xs.AppendValues([]float64{1, 2}, nil)
	xCol := xs.NewArray()
	xs.Release()
	defer xCol.Release()
	b := array.NewRecordBatch(TableSchema, []arrow.Array{idCol, names, xCol}, 2)
	defer b.Release()
	var buf bytes.Buffer
	if err := arrowipc.EncodeBatch(&buf, b, mem); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

func schemaBytes(s *arrow.Schema) []byte {
	b, err := arrowipc.EncodeSchema(s)
	if err != nil {
		panic(err)
	}
	return b
}

func col(name string) *planpb.Expr { return &planpb.Expr{Kind: &planpb.Expr_Column{Column: name}} }

func call(fn string, args ...*planpb.Expr) *planpb.Expr {
	return &planpb.Expr{Kind: &planpb.Expr_Call{Call: &planpb.Call{Function: fn, Args: args}}}
}

func intLit(v int64) *planpb.Expr {
	return &planpb.Expr{Kind: &planpb.Expr_Literal{Literal: &planpb.Literal{Value: &planpb.Literal_IntValue{IntValue: v}}}}
}

func arrowSource(id int32, table []byte) *planpb.Node {
	return &planpb.Node{Id: id, Name: "table", OutputSchema: schemaBytes(TableSchema), Kind: &planpb.Node_Source{Source: &planpb.Source{
		Kind: &planpb.Source_Arrow{Arrow: &planpb.ArrowSource{Ipc: table}}}}}
}

func datagen(id int32, rows int64) *planpb.Node {
	s := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	return &planpb.Node{Id: id, Name: "datagen", OutputSchema: schemaBytes(s), Kind: &planpb.Node_Source{Source: &planpb.Source{
		Kind: &planpb.Source_Datagen{Datagen: &planpb.DatagenSource{Rows: rows, Seed: 7}}}}}
}

func collect(id, from int32) *planpb.Node {
	return &planpb.Node{Id: id, Name: "collect", Inputs: []*planpb.Input{{Node: from}},
		Kind: &planpb.Node_Sink{Sink: &planpb.Sink{Kind: &planpb.Sink_Collect{Collect: &planpb.CollectSink{}}}}}
}

// Plans are valid job plans, each ending in a collect sink: datagen;
// an inline table through select and filter; a keyed aggregation; a
// union with a limit; drop_duplicates at parallelism 2.
func Plans() []*planpb.JobPlan {
	table := Table(40)
	hash := func(from int32, keys ...string) []*planpb.Input {
		return []*planpb.Input{{Node: from, Partitioning: &planpb.Partitioning{Kind: planpb.Partitioning_HASH, Keys: keys}}}
	}
	return []*planpb.JobPlan{
		{Name: "datagen", DefaultParallelism: 1, Nodes: []*planpb.Node{datagen(1, 50), collect(2, 1)}},
		{Name: "select-filter", DefaultParallelism: 1, Nodes: []*planpb.Node{
			arrowSource(1, table),
			{Id: 2, Name: "select", Inputs: []*planpb.Input{{Node: 1}}, Kind: &planpb.Node_Select{Select: &planpb.Select{Columns: []*planpb.NamedExpr{
				{Name: "id", Expr: col("id")}, {Name: "name", Expr: col("name")}, {Name: "y", Expr: call("multiply", col("x"), intLit(2))},
			}}}},
			{Id: 3, Name: "filter", Inputs: []*planpb.Input{{Node: 2}}, Kind: &planpb.Node_Filter{Filter: &planpb.Filter{Predicate: call("greater", col("id"), intLit(3))}}},
			collect(4, 3),
		}},
		{Name: "aggregate", DefaultParallelism: 2, Nodes: []*planpb.Node{
			arrowSource(1, table),
			{Id: 2, Name: "sum", Inputs: hash(1, "name"), OutputSchema: schemaBytes(arrow.NewSchema([]arrow.Field{
				{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
				{Name: "total", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
				{Name: "n", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
			}, nil)), Kind: &planpb.Node_KeyedAggregate{KeyedAggregate: &planpb.KeyedAggregate{
				Keys: []string{"name"}, Aggregates: []*planpb.Aggregate{{Function: "sum", Column: "x", Name: "total"}, {Function: "count", Name: "n"}},
			}}},
			collect(3, 2),
		}},
		{Name: "union-limit", DefaultParallelism: 1, Nodes: []*planpb.Node{
			datagen(1, 30), datagen(2, 30),
			{Id: 3, Name: "union", Inputs: []*planpb.Input{{Node: 1}, {Node: 2}}, Kind: &planpb.Node_Union{Union: &planpb.Union{}}},
			{Id: 4, Name: "limit", Inputs: []*planpb.Input{{Node: 3}}, Kind: &planpb.Node_Limit{Limit: &planpb.Limit{N: 10}}},
			collect(5, 4),
		}},
		{Name: "dedup", DefaultParallelism: 2, Nodes: []*planpb.Node{
			arrowSource(1, table),
			{Id: 2, Name: "dedup", Inputs: hash(1, "name"), Kind: &planpb.Node_DropDuplicates{DropDuplicates: &planpb.DropDuplicates{Subset: []string{"name"}}}},
			collect(3, 2),
		}},
		{Name: "crafted", DefaultParallelism: 1, Nodes: []*planpb.Node{arrowSource(1, CraftedStrings()), collect(2, 1)}},
	}
}

// Mutate returns a mutant of data: a few bytes flipped, set to extremes,
// inserted, deleted or a span repeated, as a byte-level fuzzer does.
func Mutate(r *rand.Rand, data []byte) []byte {
	out := bytes.Clone(data)
	for range 1 + r.IntN(4) {
		if len(out) == 0 {
			out = append(out, byte(r.Uint32()))
			continue
		}
		i := r.IntN(len(out))
		switch r.IntN(6) {
		case 0:
			out[i] ^= byte(1 << r.IntN(8))
		case 1:
			out[i] = []byte{0, 0x7f, 0x80, 0xff}[r.IntN(4)]
		case 2:
			out = append(out[:i], append([]byte{byte(r.Uint32())}, out[i:]...)...)
		case 3:
			out = append(out[:i], out[i+1:]...)
		case 4:
			j := min(len(out), i+1+r.IntN(16))
			out = append(out[:j], append(bytes.Clone(out[i:j]), out[j:]...)...)
		case 5:
			// A little-endian varint or int32 field set large.
			for k := i; k < min(len(out), i+4); k++ {
				out[k] = 0xff
			}
		}
	}
	return out
}
