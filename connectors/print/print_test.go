package print

import (
	"bytes"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/runtime/connector"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
	"github.com/flinkgo/flinkgo/runtime/rowkind"
)

var schema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

func batch(mem memory.Allocator) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2, 0}, []bool{true, true, false})
	b.Field(1).(*array.StringBuilder).AppendValues([]string{"a", `quo"te`, "c"}, nil)
	return b.NewRecordBatch()
}

// open opens a print writer through the connector, as the runtime does.
func open(cfg connector.WriterConfig) (connector.Writer, error) {
	snk, err := Sink().Decode(&planpb.Sink{Kind: &planpb.Sink_Print{Print: &planpb.PrintSink{}}})
	if err != nil {
		return nil, err
	}
	return snk.Open(cfg)
}

func TestPrintPrefixesSubtasksAsFlink(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	b := batch(mem)
	defer b.Release()
	var out bytes.Buffer
	w, err := open(connector.WriterConfig{Schema: schema, Subtask: 1, Parallelism: 2, Stdout: &out})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	want := "2> +I[1, a]\n2> +I[2, quo\"te]\n2> +I[(null), c]\n"
	if out.String() != want {
		t.Errorf("printed %q, want %q", out.String(), want)
	}
}

// A changelog's rows print with their kinds, as Flink's PrintSink; the
// row-kind column is not printed as a value.
func TestPrintShowsRowKinds(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	values := batch(mem)
	defer values.Release()
	kinds := rowkind.NewArray(mem, slices.Values([]rowkind.Kind{rowkind.UpdateBefore, rowkind.UpdateAfter, rowkind.Delete}))
	defer kinds.Release()
	b, err := rowkind.Attach(values, kinds)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release()
	var out bytes.Buffer
	w, err := open(connector.WriterConfig{Schema: b.Schema(), Parallelism: 1, Stdout: &out})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	want := "-U[1, a]\n+U[2, quo\"te]\n-D[(null), c]\n"
	if out.String() != want {
		t.Errorf("printed %q, want %q", out.String(), want)
	}
}
