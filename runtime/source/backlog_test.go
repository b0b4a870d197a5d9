package source

import (
	"context"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flinkgo/flinkgo/runtime/connector"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
)

// A datagen held back by its consumer reports the rows its rate has due
// as pending (Flink's pendingRecords), which the autoscaler reads.
func TestDatagenPendingRecordsAreRowsBehindTheRate(t *testing.T) {
	mem := checked(t)
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	src := &planpb.Source{Kind: &planpb.Source_Datagen{Datagen: &planpb.DatagenSource{RowsPerSecond: 1000}}}
	r, err := Open(src, Config{Schema: schema, Parallelism: 1, Allocator: mem})
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
	r, err := Open(src, Config{Schema: schema, Parallelism: 1, Allocator: mem})
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
