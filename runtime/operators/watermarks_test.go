package operators

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/runtime/operator"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/runtime/source"
	"github.com/flinkgo/flinkgo/runtime/watermark"
)

// wmRecorder is the assigner's downstream: what it sent, in order.
type wmRecorder struct{ events []string }

func (r *wmRecorder) EmitWatermark(_ context.Context, wm watermark.Watermark) error {
	r.events = append(r.events, "wm "+wm.String())
	return nil
}

func (r *wmRecorder) EmitStatus(_ context.Context, s watermark.Status) error {
	r.events = append(r.events, s.String())
	return nil
}

func (r *wmRecorder) emit(_ context.Context, b arrow.RecordBatch) error {
	r.events = append(r.events, fmt.Sprintf("rows %d", b.NumRows()))
	b.Release()
	return nil
}

// take returns the events recorded since the last take.
func (r *wmRecorder) take() []string {
	e := r.events
	r.events = nil
	return e
}

// fakeSplits is a file source's split report.
type fakeSplits struct {
	last    string
	pending []string
}

func (f *fakeSplits) Next(context.Context) (arrow.RecordBatch, error) { panic("not read") }
func (f *fakeSplits) Snapshot() ([]source.SplitState, error)          { return nil, nil }
func (f *fakeSplits) Close() error                                    { return nil }
func (f *fakeSplits) LastSplit() string                               { return f.last }
func (f *fakeSplits) PendingSplits() []string                         { return f.pending }

type assignerTest struct {
	t      testing.TB
	mem    *memory.CheckedAllocator
	clock  *watermark.ManualClock
	out    *wmRecorder
	a      *watermarkAssigner
	unit   arrow.TimeUnit
	schema *arrow.Schema
}

func newAssignerTest(t testing.TB, unit arrow.TimeUnit, delayMs, idleMs int64, splits *fakeSplits) *assignerTest {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	at := &assignerTest{t: t, mem: mem, clock: watermark.NewManualClock(time.Unix(0, 0)), out: &wmRecorder{}, unit: unit}
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "ts", Type: &arrow.TimestampType{Unit: unit}}}, nil)
	c := &operator.Context{
		Op: &plan.Operator{Name: "wm", UID: "ts/watermarks", Kind: plan.KindWatermarkAssigner,
			Node: &plan.Node{Kind: plan.KindWatermarkAssigner, WatermarkAssigner: &plan.WatermarkAssigner{
				TimeColumn: "ts", MaxOutOfOrdernessMs: delayMs, IdleTimeoutMs: idleMs}}},
		Parallelism: 1, In: []*arrow.Schema{schema}, Out: schema, Allocator: mem, Watermarks: at.out,
	}
	if splits != nil {
		c.SourceSplits = splits
	}
	a, err := newWatermarkAssigner(c, 200*time.Millisecond, at.clock)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	at.a, at.schema = a, schema
	return at
}

// process sends a batch of rows whose event times are millis (in the
// test's unit; -1 is a null).
func (at *assignerTest) process(millis ...int64) error {
	ids := array.NewInt64Builder(at.mem)
	ts := array.NewTimestampBuilder(at.mem, &arrow.TimestampType{Unit: at.unit})
	for i, ms := range millis {
		ids.Append(int64(i))
		if ms == -1 {
			ts.AppendNull()
			continue
		}
		v := ms
		switch at.unit {
		case arrow.Second:
			v = ms / 1000
		case arrow.Microsecond:
			v = ms*1000 + 999 // within the millisecond
		case arrow.Nanosecond:
			v = ms*1_000_000 + 999_999
		}
		ts.Append(arrow.Timestamp(v))
	}
	a, b := ids.NewArray(), ts.NewArray()
	ids.Release()
	ts.Release()
	batch := array.NewRecordBatch(at.schema, []arrow.Array{a, b}, int64(len(millis)))
	a.Release()
	b.Release()
	defer batch.Release()
	return at.a.Process(context.Background(), 0, batch, at.out.emit)
}

func (at *assignerTest) periodic() []string {
	at.t.Helper()
	if err := at.a.OnTimer(context.Background(), at.out.emit); err != nil {
		at.t.Fatal(err)
	}
	return at.out.take()
}

func (at *assignerTest) mustProcess(millis ...int64) []string {
	at.t.Helper()
	if err := at.process(millis...); err != nil {
		at.t.Fatal(err)
	}
	return at.out.take()
}

func wantEvents(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
		t.Fatalf("%s: sent %q, want %q", what, got, want)
	}
}

// Flink's BoundedOutOfOrdernessWatermarksTest vectors: nothing before the
// first row; max - delay - 1 after rows out of order; a repeated probe sends
// nothing new (the output only sends a watermark that advanced). Rows pass
// unchanged, before any watermark they cause.
func TestWatermarkAssignerBoundedOutOfOrderness(t *testing.T) {
	for _, unit := range []arrow.TimeUnit{arrow.Millisecond, arrow.Second, arrow.Microsecond, arrow.Nanosecond} {
		t.Run(unit.String(), func(t *testing.T) {
			at := newAssignerTest(t, unit, 10_000, 0, nil)
			wantEvents(t, "before any row", at.periodic())
			wantEvents(t, "rows", at.mustProcess(13_373_000, 1_337_000), "rows 2")
			wantEvents(t, "after rows out of order", at.periodic(), "wm 13362999")
			wantEvents(t, "repeated probe", at.periodic())
			wantEvents(t, "an older row", at.mustProcess(5_000_000), "rows 1")
			wantEvents(t, "after an older row", at.periodic())
			wantEvents(t, "a newer row", at.mustProcess(18_889_000), "rows 1")
			wantEvents(t, "after a newer row", at.periodic(), "wm 18878999")
		})
	}
}

// Upstream watermarks stop at the assigner; the maximum one (the end of
// input) goes on.
func TestWatermarkAssignerStopsUpstreamWatermarks(t *testing.T) {
	at := newAssignerTest(t, arrow.Millisecond, 0, 0, nil)
	ctx := context.Background()
	if wm, _ := at.a.OnWatermark(ctx, 1234, at.out.emit); wm != watermark.MinWatermark {
		t.Errorf("an upstream watermark went on as %v", wm)
	}
	if wm, _ := at.a.OnWatermark(ctx, watermark.MaxWatermark, at.out.emit); wm != watermark.MaxWatermark {
		t.Errorf("the end of input went on as %v, want MAX", wm)
	}
	var _ operator.WatermarkGenerator = at.a
}

// Flink's WatermarksWithIdlenessTest, through the operator: the quiet
// period starts at the first periodic emit without rows, the output turns
// idle at the first emit strictly more than the timeout later, and the
// next row makes it active before the row goes on.
func TestWatermarkAssignerIdleness(t *testing.T) {
	at := newAssignerTest(t, arrow.Millisecond, 0, 1000, nil)
	wantEvents(t, "row", at.mustProcess(100), "rows 1")
	wantEvents(t, "first emit", at.periodic(), "wm 99")
	at.clock.Advance(10 * time.Second)
	wantEvents(t, "quiet period starts", at.periodic())
	at.clock.Advance(1000 * time.Millisecond)
	wantEvents(t, "exactly the timeout", at.periodic())
	at.clock.Advance(time.Millisecond)
	wantEvents(t, "past the timeout", at.periodic(), "IDLE")
	at.clock.Advance(time.Hour)
	wantEvents(t, "still idle", at.periodic())
	wantEvents(t, "a row ends idleness before it goes on", at.mustProcess(200), "ACTIVE", "rows 1")
	wantEvents(t, "active again", at.periodic(), "wm 199")
}

// Chained after a file source, each file has its own generator and the
// output is the minimum over the files not idle: a file not read yet holds
// the watermark back, so that the second file's older rows are not late; a
// file read to its end stops counting.
func TestWatermarkAssignerPerSplit(t *testing.T) {
	splits := &fakeSplits{pending: []string{"a.csv", "b.csv"}}
	at := newAssignerTest(t, arrow.Millisecond, 0, 0, splits)
	splits.last = "a.csv"
	wantEvents(t, "a.csv", at.mustProcess(1000, 2000), "rows 2")
	wantEvents(t, "b.csv not read yet holds the watermark", at.periodic())
	splits.last, splits.pending = "b.csv", []string{"b.csv"}
	wantEvents(t, "b.csv's first rows", at.mustProcess(10, 20), "rows 2")
	wantEvents(t, "a.csv read to its end", at.periodic(), "wm 19")

	// Without splits, the same rows make b.csv's rows late.
	at = newAssignerTest(t, arrow.Millisecond, 0, 0, nil)
	at.mustProcess(1000, 2000)
	wantEvents(t, "one generator", at.periodic(), "wm 1999")
}

// With idleness per split, a file with no rows for the timeout stops
// holding the others back.
func TestWatermarkAssignerIdleSplit(t *testing.T) {
	splits := &fakeSplits{pending: []string{"a.csv", "b.csv"}, last: "a.csv"}
	at := newAssignerTest(t, arrow.Millisecond, 0, 1000, splits)
	wantEvents(t, "a.csv", at.mustProcess(1000), "rows 1")
	wantEvents(t, "b.csv holds", at.periodic())
	at.clock.Advance(500 * time.Millisecond)
	at.mustProcess(1500)
	wantEvents(t, "b.csv quiet", at.periodic())
	at.clock.Advance(1001 * time.Millisecond)
	at.mustProcess(1600)
	wantEvents(t, "b.csv idle", at.periodic(), "wm 1599")
}

func TestWatermarkAssignerRefusesNullTimes(t *testing.T) {
	at := newAssignerTest(t, arrow.Millisecond, 0, 0, nil)
	err := at.process(5, -1)
	if err == nil || !strings.Contains(err.Error(), `time column "ts" is null`) {
		t.Fatalf("got %v, want an error naming the column", err)
	}
}

func TestWatermarkAssignerSchemaNamesTheColumnAndType(t *testing.T) {
	op := &plan.Operator{Kind: plan.KindWatermarkAssigner, Node: &plan.Node{Kind: plan.KindWatermarkAssigner, WatermarkAssigner: &plan.WatermarkAssigner{TimeColumn: "ts"}}}
	for _, tc := range []struct {
		schema *arrow.Schema
		want   string
	}{
		{arrow.NewSchema([]arrow.Field{{Name: "ts", Type: arrow.PrimitiveTypes.Int64}}, nil), `time column "ts" is int64, not a timestamp`},
		{arrow.NewSchema([]arrow.Field{{Name: "t", Type: arrow.FixedWidthTypes.Timestamp_ms}}, nil), `no column "ts" (columns: [t])`},
	} {
		_, err := watermarkSchema(op, []*arrow.Schema{tc.schema})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want %q", err, tc.want)
		}
	}
	ok := arrow.NewSchema([]arrow.Field{{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_us}}, nil)
	if s, err := watermarkSchema(op, []*arrow.Schema{ok}); err != nil || s != ok {
		t.Errorf("a timestamp column: %v", err)
	}
}

// Before the epoch, a microsecond time is in the millisecond below it.
func TestToMillisRoundsDown(t *testing.T) {
	if got := toMillis(arrow.Microsecond)(-1); got != -1 {
		t.Errorf("-1 µs is in millisecond %d, want -1", got)
	}
	if got := toMillis(arrow.Nanosecond)(1_999_999); got != 1 {
		t.Errorf("1999999 ns is in millisecond %d, want 1", got)
	}
}

// The assigner's cost per row: the max of the time column (rows are passed
// on, not copied).
func BenchmarkWatermarkAssigner(b *testing.B) {
	const rows = 10_000
	at := newAssignerTest(b, arrow.Millisecond, 5000, 0, nil)
	ts := array.NewTimestampBuilder(at.mem, &arrow.TimestampType{Unit: arrow.Millisecond})
	ids := array.NewInt64Builder(at.mem)
	for i := range int64(rows) {
		ids.Append(i)
		ts.Append(arrow.Timestamp(i * 7 % 5000))
	}
	idCol, tsCol := ids.NewArray(), ts.NewArray()
	ids.Release()
	ts.Release()
	batch := array.NewRecordBatch(at.schema, []arrow.Array{idCol, tsCol}, rows)
	idCol.Release()
	tsCol.Release()
	defer batch.Release()
	discard := func(_ context.Context, b arrow.RecordBatch) error { b.Release(); return nil }
	ctx := context.Background()
	b.SetBytes(rows * 8)
	b.ResetTimer()
	for b.Loop() {
		if err := at.a.Process(ctx, 0, batch, discard); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)*rows/b.Elapsed().Seconds(), "rows/s")
}
