package server

import (
	"testing"
	"time"

	"github.com/flinkgo/flinkgo/runtime/job"
)

// The job's counters reach the client: rows in and out, and a window's
// numLateRecordsDropped.
func TestProgressCarriesOperatorCounters(t *testing.T) {
	p := progress(&job.Metrics{Operators: []job.OperatorMetrics{
		{Name: "window", UID: "w", Parallelism: 2, RowsIn: 10, RowsOut: 3, LateRecordsDropped: 4},
	}}, time.Now())
	if len(p.GetOperators()) != 1 {
		t.Fatalf("operators: %v", p.GetOperators())
	}
	op := p.GetOperators()[0]
	if op.GetUid() != "w" || op.GetRowsIn() != 10 || op.GetRowsOut() != 3 || op.GetLateRecordsDropped() != 4 {
		t.Fatalf("progress %v", op)
	}
}
