package job

import (
	"context"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// A source held to its rate (a datagen's rows_per_second) spends most of
// its time waiting for the rate: those waits are idle time, not busy (they
// counted as busy, so the dashboard painted a nearly idle source red and
// the autoscaler read it as saturated).
func TestRateLimitedSourceWaitsCountAsIdle(t *testing.T) {
	const rows, rate = 300, 100 // 3 s at the rate, in batches of 10 rows (a tenth of a second)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	j, err := Start(context.Background(), datagenToCSV(t, rows, rate, 1, 1, t.TempDir(), nil), Options{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Wait(); err != nil {
		t.Fatal(err)
	}
	for _, v := range j.Vertices() {
		if v.Head.UID != "numbers" {
			continue
		}
		got := v.Tasks[0].Read()
		// The reader sleeps until each batch is due (the first one a tenth
		// of a second after it starts): about 3 s in all, less the little
		// time it takes to generate and emit 300 rows.
		if got.RecordsIn != rows || got.Idle < time.Second || got.Idle <= got.Busy {
			t.Errorf("the rate-limited source read %d rows, busy %v, idle %v, back-pressured %v: want its waits idle (over 1 s, more than busy)",
				got.RecordsIn, got.Busy, got.Idle, got.BackPressured)
		}
		return
	}
	t.Fatal("no vertex of the datagen")
}
