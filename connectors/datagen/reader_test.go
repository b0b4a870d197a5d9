package datagen

import (
	"context"
	"encoding/base64"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/runtime/connector"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
	"github.com/flinkgo/flinkgo/runtime/source"
)

// openOf opens a generator's reader through the connector.
func openOf(src *planpb.Source, cfg connector.ReaderConfig) (connector.Reader, error) {
	c, err := Source().Decode(src)
	if err != nil {
		return nil, err
	}
	return c.Open(cfg)
}

func checked(t *testing.T) *memory.CheckedAllocator {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	return mem
}

// readAll reads every subtask of src and returns column values per subtask.
func readAll(t *testing.T, mem memory.Allocator, src *planpb.Source, schema *arrow.Schema, p, batchRows int) [][]string {
	t.Helper()
	out := make([][]string, p)
	for i := range p {
		r, err := openOf(src, connector.ReaderConfig{Schema: schema, Subtask: i, Parallelism: p, BatchRows: batchRows, Allocator: mem})
		if err != nil {
			t.Fatal(err)
		}
		batches, err := source.ReadAll(context.Background(), r)
		_ = r.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range batches {
			if b.NumRows() > int64(batchRows) {
				t.Errorf("batch of %d rows, limit %d", b.NumRows(), batchRows)
			}
			for row := range int(b.NumRows()) {
				var fields []string
				for c := range int(b.NumCols()) {
					fields = append(fields, b.Column(c).ValueStr(row))
				}
				out[i] = append(out[i], strings.Join(fields, ","))
			}
			b.Release()
		}
	}
	return out
}

func TestDatagenIsReproducibleAtAnyParallelism(t *testing.T) {
	mem := checked(t)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "x", Type: arrow.PrimitiveTypes.Float64},
		{Name: "name", Type: arrow.BinaryTypes.String},
	}, nil)
	src := &planpb.Source{Kind: &planpb.Source_Datagen{Datagen: &planpb.DatagenSource{Rows: 1000, Seed: 7}}}
	one := slices.Concat(readAll(t, mem, src, schema, 1, 128)...)
	three := slices.Concat(readAll(t, mem, src, schema, 3, 100)...)
	if !slices.Equal(one, three) || len(one) != 1000 {
		t.Fatalf("parallelism 1 and 3 differ or lose rows: %d vs %d rows", len(one), len(three))
	}
	// The documented formula: row 5, column 1 (x) with seed 7.
	want := fmt.Sprintf("5,%s,name-5", strconvFloat(float64(source.Mix(7, 5, 1)>>11)/(1<<53)))
	if one[5] != want {
		t.Errorf("row 5 = %s, want %s", one[5], want)
	}
}

func TestDatagenRejectsUnsupportedTypes(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64)}}, nil)
	src := &planpb.Source{Kind: &planpb.Source_Datagen{Datagen: &planpb.DatagenSource{Rows: 1}}}
	_, err := openOf(src, connector.ReaderConfig{Schema: schema, Parallelism: 1})
	if err == nil || !strings.Contains(err.Error(), `column "l"`) {
		t.Fatalf("got %v", err)
	}
}

func TestDatagenMoreTypes(t *testing.T) {
	mem := checked(t)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "b", Type: arrow.BinaryTypes.Binary},
		{Name: "h", Type: arrow.FixedWidthTypes.Float16},
		{Name: "t", Type: arrow.FixedWidthTypes.Time64us},
		{Name: "d", Type: arrow.FixedWidthTypes.Duration_ms},
		{Name: "dec", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}},
	}, nil)
	src := &planpb.Source{Kind: &planpb.Source_Datagen{Datagen: &planpb.DatagenSource{Rows: 5, Seed: 1}}}
	got := readAll(t, mem, src, schema, 1, 10)
	// Binary prints as base64; row 3 is "b-3", 3 µs, 3 ms and 3.
	want := base64.StdEncoding.EncodeToString([]byte("b-3"))
	if len(got[0]) != 5 || !strings.HasPrefix(got[0][3], want+",") || !strings.HasSuffix(got[0][3], ",00:00:00.000003,3ms,3") {
		t.Errorf("rows %v", got[0])
	}
}

// A datagen repeats its column's name in every generated string: a name
// past the limit is refused, and so is a rate that is not a number.
func TestDatagenBoundsWhatAPlanMakesItAllocate(t *testing.T) {
	long := arrow.NewSchema([]arrow.Field{{Name: strings.Repeat("n", 1<<20), Type: arrow.BinaryTypes.String}}, nil)
	src := &planpb.Source{Kind: &planpb.Source_Datagen{Datagen: &planpb.DatagenSource{Rows: 10}}}
	if _, err := openOf(src, connector.ReaderConfig{Schema: long, Parallelism: 1}); err == nil || !strings.Contains(err.Error(), "datagen.NameLimit") {
		t.Errorf("a 1 MiB column name: %v", err)
	}
	ids := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	nan := &planpb.Source{Kind: &planpb.Source_Datagen{Datagen: &planpb.DatagenSource{RowsPerSecond: math.NaN()}}}
	if _, err := openOf(nan, connector.ReaderConfig{Schema: ids, Parallelism: 1}); err == nil {
		t.Error("a NaN rate was accepted")
	}
}

// A datagen held back by its consumer reports the rows its rate has due
// as pending (Flink's pendingRecords), which the autoscaler reads.
func TestDatagenPendingRecordsAreRowsBehindTheRate(t *testing.T) {
	mem := checked(t)
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	src := &planpb.Source{Kind: &planpb.Source_Datagen{Datagen: &planpb.DatagenSource{RowsPerSecond: 1000}}}
	r, err := openOf(src, connector.ReaderConfig{Schema: schema, Parallelism: 1, Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	bl, ok := r.(connector.Backlog)
	if !ok || bl.PendingRecords() != 0 {
		t.Fatalf("a datagen with a rate is a connector.Backlog with nothing pending before it starts")
	}
	b, err := r.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	b.Release()
	// The consumer took 100 rows, then stalled for ten seconds.
	g := r.(*datagen)
	g.pace.Start = g.pace.Start.Add(-10 * time.Second)
	if p := bl.PendingRecords(); p < 9900 || p > 10100 {
		t.Fatalf("pending %d after a 10 s stall at 1000 rows/s with 100 rows taken, want about 9900", p)
	}
}

// A bounded datagen's backlog never counts rows it does not have: held
// back far beyond its end, it reports the rows it has left.
func TestDatagenPendingRecordsStopAtItsRows(t *testing.T) {
	mem := checked(t)
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	src := &planpb.Source{Kind: &planpb.Source_Datagen{Datagen: &planpb.DatagenSource{Rows: 500, RowsPerSecond: 1000}}}
	r, err := openOf(src, connector.ReaderConfig{Schema: schema, Parallelism: 1, Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	b, err := r.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	taken := b.NumRows()
	b.Release()
	g := r.(*datagen)
	g.pace.Start = g.pace.Start.Add(-time.Hour)
	if p := r.(connector.Backlog).PendingRecords(); p != 500-taken {
		t.Fatalf("pending %d an hour behind with %d of 500 rows taken, want %d", p, taken, 500-taken)
	}
}

func strconvFloat(f float64) string {
	b := array.NewFloat64Builder(memory.DefaultAllocator)
	defer b.Release()
	b.Append(f)
	a := b.NewArray()
	defer a.Release()
	return a.ValueStr(0)
}
