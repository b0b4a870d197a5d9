package job

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"go.uber.org/goleak"

	"github.com/flinkgo/flinkgo/internal/arrowipc"
	"github.com/flinkgo/flinkgo/runtime/operators"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
)

// lateInputMoved are the event times (ms) of the rows of the late-rows
// job moved back in time; the others' is id * 100 ms.
var lateInputMoved = map[int64]int64{45: 2500, 55: 1200, 60: 3600, 69: 4999, 99: 0}

func lateInputTime(id int64) int64 {
	if ts, ok := lateInputMoved[id]; ok {
		return ts
	}
	return id * 100
}

// lateRowsJob plans a CSV file (read in batches of 10 rows) →
// with_watermark(ts, 0) chained to it → key_by(k).window(tumble(ts, 1 s),
// allowed_lateness 1.5 s, late_rows=KEEP) at parallelism p → collect
// "windows"; its late rows → collect "late" (forward, chained) and, through
// a rebalance, collect "late-single" at parallelism 1.
func lateRowsJob(t *testing.T, path string, p int) *plan.Graph {
	t.Helper()
	ts := &arrow.TimestampType{Unit: arrow.Millisecond}
	i64 := func(name string) arrow.Field {
		return arrow.Field{Name: name, Type: arrow.PrimitiveTypes.Int64, Nullable: true}
	}
	encode := func(fields ...arrow.Field) []byte {
		b, err := arrowipc.EncodeSchema(arrow.NewSchema(fields, nil))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	input := encode(i64("id"), i64("k"), arrow.Field{Name: "ts", Type: ts})
	windowed := encode(i64("k"), arrow.Field{Name: "window_start", Type: ts}, arrow.Field{Name: "window_end", Type: ts}, i64("n"))
	collect := &planpb.Sink{Kind: &planpb.Sink_Collect{Collect: &planpb.CollectSink{}}}
	late := func(kind planpb.Partitioning_Kind) *planpb.Input {
		return &planpb.Input{Node: 3, Output: planpb.Input_LATE_ROWS, Partitioning: &planpb.Partitioning{Kind: kind}}
	}
	nodes := []*planpb.Node{
		{Id: 1, Uid: "file", Name: "file", OutputSchema: input, Parallelism: 1, Kind: &planpb.Node_Source{Source: &planpb.Source{
			Kind: &planpb.Source_File{File: &planpb.FileSource{Format: planpb.FileSource_CSV, Paths: []string{path}, CsvHasHeader: true}}}}},
		{Id: 2, Uid: "wm", Name: "wm", OutputSchema: input, Parallelism: 1, Inputs: []*planpb.Input{{Node: 1}},
			Kind: &planpb.Node_WatermarkAssigner{WatermarkAssigner: &planpb.WatermarkAssigner{TimeColumn: "ts"}}},
		{Id: 3, Uid: "window", Name: "window", OutputSchema: windowed, Inputs: []*planpb.Input{{Node: 2}},
			Kind: &planpb.Node_WindowAggregate{WindowAggregate: &planpb.WindowAggregate{
				TimeColumn: "ts", Kind: planpb.WindowAggregate_TUMBLE, SizeMs: 1000, Keys: []string{"k"}, AllowedLatenessMs: 1500,
				LateRows: planpb.WindowAggregate_KEEP, Aggregates: []*planpb.Aggregate{{Function: "count", Name: "n"}}}}},
		{Id: 4, Uid: "windows", Name: "windows", OutputSchema: windowed, Inputs: []*planpb.Input{{Node: 3}}, Kind: &planpb.Node_Sink{Sink: collect}},
		{Id: 5, Uid: "late", Name: "late", OutputSchema: input, Inputs: []*planpb.Input{late(planpb.Partitioning_FORWARD_IMPLICIT)}, Kind: &planpb.Node_Sink{Sink: collect}},
		{Id: 6, Uid: "late-single", Name: "late-single", OutputSchema: input, Parallelism: 1,
			Inputs: []*planpb.Input{late(planpb.Partitioning_REBALANCE)}, Kind: &planpb.Node_Sink{Sink: collect}},
	}
	g, err := plan.PlanWire(&planpb.JobPlan{Name: "late rows", DefaultParallelism: int32(p), Nodes: nodes}, plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// The late rows of a window with late_rows=KEEP reach every consumer of
// its late-rows output, chained or across an exchange, and only them; the
// windows reach theirs. The source's batches of 10 rows are each followed
// by a watermark (max ts - 1 ms: the interval is 1 ns), so which rows are
// late follows from Flink's rules alone, by hand (tumble 1 s, cleanup at
// end - 1 + 1.5 s):
//   - id 45 at 2.5 s: watermark 3.899 s (ids 30-39) passed [2 s, 3 s)'s end
//     but not its cleanup 4.499 s: the window fires again with it;
//   - id 55 at 1.2 s: [1 s, 2 s), cleanup 3.499 s, watermark 4.899 s: late;
//   - id 60 at 3.6 s: [3 s, 4 s), cleanup 5.499 s, watermark 5.899 s: late;
//   - id 69 at 4.999 s: [4 s, 5 s) fired (4.999 s), cleanup 6.499 s: fires again;
//   - id 99 at 0 s: late.
func TestWindowLateRowsReachTheirConsumers(t *testing.T) {
	var sb strings.Builder
	sb.WriteString("id,k,ts\n")
	for id := range int64(100) {
		fmt.Fprintf(&sb, "%d,%d,%s\n", id, id%2, time.UnixMilli(lateInputTime(id)).UTC().Format("2006-01-02 15:04:05.000"))
	}
	path := filepath.Join(t.TempDir(), "in.csv")
	if err := os.WriteFile(path, []byte(sb.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	// Every task goroutine of the runs is gone once they have returned.
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	for _, p := range []int{1, 3} {
		t.Run(fmt.Sprintf("parallelism %d", p), func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			var mu sync.Mutex
			got := map[string][]string{}
			reg := operators.Registry(operators.Options{
				SourceBatchRows:   10,
				WatermarkInterval: time.Nanosecond, // every batch is past the deadline
				Collect: func(op *plan.Operator, _ int, b arrow.RecordBatch) error {
					defer b.Release()
					mu.Lock()
					defer mu.Unlock()
					for i := range int(b.NumRows()) {
						var line string
						if op.UID == "windows" {
							line = fmt.Sprintf("k=%d [%d,%d) n=%d", b.Column(0).(*array.Int64).Value(i), b.Column(1).(*array.Timestamp).Value(i),
								b.Column(2).(*array.Timestamp).Value(i), b.Column(3).(*array.Int64).Value(i))
						} else {
							line = fmt.Sprintf("id=%d k=%d ts=%d", b.Column(0).(*array.Int64).Value(i), b.Column(1).(*array.Int64).Value(i),
								b.Column(2).(*array.Timestamp).Value(i))
						}
						got[op.UID] = append(got[op.UID], line)
					}
					return nil
				},
			})
			m, err := Run(context.Background(), lateRowsJob(t, path, p), Options{Allocator: mem, Registry: reg})
			if err != nil {
				t.Fatal(err)
			}
			wantLate := []string{"id=55 k=1 ts=1200", "id=60 k=0 ts=3600", "id=99 k=1 ts=0"}
			for _, sink := range []string{"late", "late-single"} {
				slices.Sort(got[sink])
				if !slices.Equal(got[sink], wantLate) {
					t.Errorf("%s got %q, want %q", sink, got[sink], wantLate)
				}
			}
			for _, op := range m.Operators {
				if op.UID == "window" && op.LateRecordsDropped != 0 {
					t.Errorf("numLateRecordsDropped %d, want 0: kept rows are not dropped", op.LateRecordsDropped)
				}
			}
			// Every window of the on-time rows once, and the two re-fired
			// ones again with the row that came within the lateness.
			n := map[string]int{}
			for id := range int64(100) {
				if id == 55 || id == 60 || id == 99 {
					continue
				}
				start := lateInputTime(id) / 1000 * 1000
				n[fmt.Sprintf("k=%d [%d,%d)", id%2, start, start+1000)]++
			}
			var want []string
			for w, c := range n {
				want = append(want, fmt.Sprintf("%s n=%d", w, c))
			}
			want = append(want, "k=1 [2000,3000) n=5", "k=1 [4000,5000) n=4")
			slices.Sort(want)
			slices.Sort(got["windows"])
			if !slices.Equal(got["windows"], want) {
				t.Errorf("windows got\n%q\nwant\n%q", got["windows"], want)
			}
		})
	}
}
