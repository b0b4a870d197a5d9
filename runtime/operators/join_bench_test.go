package operators

import (
	"context"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/runtime/plan"
)

// BenchmarkEquiJoin drives one join subtask directly (real Pebble): both
// sides alternate batches of 1000 rows, keys id % (b.N/4), so each key has
// about 4 rows per side; rows/s counts both inputs.
//
//	go test -run '^$' -bench EquiJoin -benchtime 200000x ./runtime/operators/
func BenchmarkEquiJoin(b *testing.B) {
	for _, how := range []plan.JoinType{plan.InnerJoin, plan.LeftJoin} {
		b.Run(how.String(), func(b *testing.B) {
			mem := memory.NewGoAllocator()
			j, _ := newEqJoin(b, mem, eqSpec{how: how})
			defer j.Release()
			keys := max(int64(b.N/4), 1)
			const batch = 1000
			var batches [2][]arrow.RecordBatch
			for s := range 2 {
				for start := 0; start < b.N; start += batch {
					rows := make([]eqRow, 0, batch)
					for i := start; i < min(start+batch, b.N); i++ {
						k := int64(i) % keys
						rows = append(rows, eqRow{id: int64(i), key: &k, s: fmt.Sprint("s", i)})
					}
					batches[s] = append(batches[s], eqBatch(mem, j.c.In[s], rows))
				}
			}
			out := 0
			emit := func(_ context.Context, r arrow.RecordBatch) error {
				out += int(r.NumRows())
				r.Release()
				return nil
			}
			b.ResetTimer()
			for i := range batches[0] {
				for s := range 2 {
					if err := j.Process(context.Background(), s, batches[s][i], emit); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(2*b.N)/b.Elapsed().Seconds(), "rows/s")
			for s := range 2 {
				for _, r := range batches[s] {
					r.Release()
				}
			}
		})
	}
}
