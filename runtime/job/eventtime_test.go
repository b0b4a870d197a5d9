package job

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/internal/arrowipc"
	"github.com/flinkgo/flinkgo/runtime/operator"
	"github.com/flinkgo/flinkgo/runtime/operators"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
	"github.com/flinkgo/flinkgo/runtime/watermark"
	"github.com/flinkgo/flinkgo/udf/bridge/bridgetest"
	"github.com/flinkgo/flinkgo/udf/bridge/bridgetest/goworker"
)

// eventLog records, in order, the rows (their event times) and the
// watermarks that reach the operator after the watermark assigner.
type eventLog struct {
	mu     sync.Mutex
	events []string
	// late lists rows at or below a watermark that came before them.
	late []string
	wm   watermark.Watermark
	wms  []watermark.Watermark
}

// timeRecorder (test only, in place of the select kind) records into log.
type timeRecorder struct {
	operator.Base
	log *eventLog
}

func (r *timeRecorder) Process(ctx context.Context, _ int, b arrow.RecordBatch, emit operator.Emit) error {
	r.log.mu.Lock()
	for _, ts := range b.Column(1).(*array.Timestamp).TimestampValues() {
		if watermark.Watermark(ts) <= r.log.wm {
			r.log.late = append(r.log.late, fmt.Sprintf("row %d after watermark %v", ts, r.log.wm))
		}
	}
	r.log.events = append(r.log.events, fmt.Sprintf("rows %d", b.NumRows()))
	r.log.mu.Unlock()
	b.Retain()
	return emit(ctx, b)
}

func (r *timeRecorder) OnWatermark(_ context.Context, wm operator.Watermark, _ operator.Emit) (operator.Watermark, error) {
	r.log.mu.Lock()
	defer r.log.mu.Unlock()
	r.log.wm = wm
	r.log.wms = append(r.log.wms, wm)
	return wm, nil
}

// writeTimedCSV writes rows id, ts (milliseconds since the epoch) for ids
// [from, to), ts = base + id.
func writeTimedCSV(t *testing.T, path string, from, to, base int64) {
	t.Helper()
	var sb strings.Builder
	sb.WriteString("id,ts\n")
	for id := from; id < to; id++ {
		ts := time.UnixMilli(base + id).UTC().Format("2006-01-02 15:04:05.000")
		fmt.Fprintf(&sb, "%d,%s\n", id, ts)
	}
	if err := os.WriteFile(path, []byte(sb.String()), 0o600); err != nil {
		t.Fatal(err)
	}
}

// eventTimeJob plans files [-> rebalance] -> with_watermark(ts, delay) ->
// record -> collect at parallelism 1.
//
// With extract, the time column goes through a timestamp extractor (a
// select, ts = ts) chained between the source and the assigner.
func eventTimeJob(t *testing.T, paths []string, delayMs int64, rebalance, extract bool) *plan.Graph {
	t.Helper()
	schema, err := arrowipc.EncodeSchema(arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Millisecond}},
	}, nil))
	if err != nil {
		t.Fatal(err)
	}
	src := &planpb.Node{Id: 1, Name: "files", OutputSchema: schema, Kind: &planpb.Node_Source{Source: &planpb.Source{
		Kind: &planpb.Source_File{File: &planpb.FileSource{Format: planpb.FileSource_CSV, Paths: paths, CsvHasHeader: true}}}}}
	in := &planpb.Input{Node: 1}
	if rebalance {
		in.Partitioning = &planpb.Partitioning{Kind: planpb.Partitioning_REBALANCE}
	}
	wm := &planpb.Node{Id: 2, Name: "wm", Uid: "ts", OutputSchema: schema, Inputs: []*planpb.Input{in},
		Kind: &planpb.Node_WatermarkAssigner{WatermarkAssigner: &planpb.WatermarkAssigner{TimeColumn: "ts", MaxOutOfOrdernessMs: delayMs}}}
	if extract {
		wm.GetWatermarkAssigner().TimeExtractor = &planpb.Select{Columns: []*planpb.NamedExpr{
			{Name: "id", Expr: columnExpr("id")}, {Name: "ts", Expr: columnExpr("ts")}}}
	}
	record := &planpb.Node{Id: 3, Name: "record", OutputSchema: schema, Inputs: []*planpb.Input{{Node: 2}},
		Kind: &planpb.Node_Select{Select: &planpb.Select{Columns: []*planpb.NamedExpr{{Name: "id", Expr: columnExpr("id")}, {Name: "ts", Expr: columnExpr("ts")}}}}}
	sink := &planpb.Node{Id: 4, Name: "collect", OutputSchema: schema, Inputs: []*planpb.Input{{Node: 3}},
		Kind: &planpb.Node_Sink{Sink: &planpb.Sink{Kind: &planpb.Sink_Collect{Collect: &planpb.CollectSink{}}}}}
	g, err := plan.PlanWire(&planpb.JobPlan{Name: "event time", DefaultParallelism: 1, Nodes: []*planpb.Node{src, wm, record, sink}}, plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// runEventTime runs g with a watermark emitted after every batch, and
// returns what reached the recorder and the rows collected.
func runEventTime(t *testing.T, g *plan.Graph) (*eventLog, int64) {
	t.Helper()
	log := &eventLog{wm: watermark.MinWatermark}
	var rows int64
	base := operators.Registry(operators.Options{
		SourceBatchRows:   100,
		WatermarkInterval: time.Nanosecond, // every batch is past the deadline
		Collect: func(_ *plan.Operator, _ int, b arrow.RecordBatch) error {
			rows += b.NumRows()
			b.Release()
			return nil
		},
	})
	selectKind, err := base.Lookup(plan.KindSelect)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := base.With(operator.Kind{Kind: plan.KindSelect,
		Schema: func(_ *plan.Operator, in []*arrow.Schema) (*arrow.Schema, error) { return in[0], nil },
		New: func(c *operator.Context) (operator.Operator, error) {
			if c.Op.Role == plan.RoleExtractTimestamp {
				return selectKind.New(c)
			}
			return &timeRecorder{log: log}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	j, err := Start(context.Background(), g, Options{Allocator: mem, Registry: reg, SourceBatchRows: 100, ChannelCapacity: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Wait(); err != nil {
		t.Fatal(err)
	}
	return log, rows
}

// A source subtask reading two files in turn: the second file's rows are
// older than the first's. With the assigner chained to the file source
// (directly or through a timestamp extractor: per-file generators), the
// unread file holds the watermark back, so no
// row is late; behind an exchange (one generator for the stream), the
// second file's rows are late. Either way watermarks grow, each is
// max - delay - 1 of the rows before it, and the end of input sends the
// maximum watermark last.
func TestWatermarksPerFileSplit(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.csv"), filepath.Join(dir, "b.csv")
	writeTimedCSV(t, a, 0, 1000, 1_000_000) // ts 1_000_000 .. 1_000_999
	writeTimedCSV(t, b, 1000, 2000, -1000)  // ts 0 .. 999
	for _, tc := range []struct {
		name               string
		rebalance, extract bool
		wantLate           bool
	}{
		{"chained to the source", false, false, false},
		{"after a timestamp extractor chained to the source", false, true, false},
		{"behind an exchange", true, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := eventTimeJob(t, []string{a, b}, 10, tc.rebalance, tc.extract)
			chains := map[string]int{}
			for _, op := range g.Operators {
				chains[op.UID] = op.ChainID
			}
			if ext, ok := chains["ts/extract-timestamp"]; tc.extract && (!ok || ext != chains["source-1"]) {
				t.Fatalf("the extractor is not chained to the source:\n%s", g.Explain())
			}
			log, rows := runEventTime(t, g)
			if rows != 2000 {
				t.Fatalf("collected %d rows, want 2000", rows)
			}
			log.mu.Lock()
			defer log.mu.Unlock()
			t.Logf("watermarks %v", log.wms)
			if (len(log.late) > 0) != tc.wantLate {
				t.Fatalf("late rows %d (first: %v), want late rows: %v; watermarks %v", len(log.late), first(log.late), tc.wantLate, log.wms)
			}
			wms := log.wms
			if len(wms) < 2 || wms[len(wms)-1] != watermark.MaxWatermark {
				t.Fatalf("watermarks %v: want some, then the maximum last", wms)
			}
			for i, wm := range wms[:len(wms)-1] {
				if i > 0 && wm <= wms[i-1] {
					t.Fatalf("watermarks %v do not grow at %d", wms, i)
				}
				// Every watermark is max - 10 - 1 of a prefix of the rows.
				if ms := int64(wm) + 11; !(ms >= 0 && ms < 1000) && !(ms >= 1_000_000 && ms < 1_001_000) {
					t.Fatalf("watermark %v is not an event time - 11 ms", wm)
				}
			}
		})
	}
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

// flushRecorder (test only, in place of the select kind) checks that when
// a watermark W (made with delay d) arrives, the row it was made from,
// event time W + d + 1, has arrived before it.
type flushRecorder struct {
	operator.Base
	delay  int64
	mu     *sync.Mutex
	maxTS  *int64
	wms    *[]watermark.Watermark
	errors *[]string
}

func (r *flushRecorder) Process(ctx context.Context, _ int, b arrow.RecordBatch, emit operator.Emit) error {
	r.mu.Lock()
	for _, ts := range b.Column(1).(*array.Timestamp).TimestampValues() {
		*r.maxTS = max(*r.maxTS, int64(ts))
	}
	r.mu.Unlock()
	b.Retain()
	return emit(ctx, b)
}

func (r *flushRecorder) OnWatermark(_ context.Context, wm operator.Watermark, _ operator.Emit) (operator.Watermark, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	*r.wms = append(*r.wms, wm)
	if wm != watermark.MaxWatermark && *r.maxTS < int64(wm)+r.delay+1 {
		*r.errors = append(*r.errors, fmt.Sprintf("watermark %v arrived before its row %d (greatest seen %d)", wm, int64(wm)+r.delay+1, *r.maxTS))
	}
	return wm, nil
}

// A UDF operator after with_watermark holds each watermark until the
// bundle in flight is finished (PyFlink): with a worker that answers only
// when flushed, every row before a watermark still reaches the next
// operator before it.
func TestUDFFinishesItsBundleBeforeTheWatermark(t *testing.T) {
	const rows, delay = 3000, 5
	i64 := arrow.Field{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true}
	ts := arrow.Field{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Millisecond}, Nullable: true}
	y := arrow.Field{Name: "y", Type: arrow.PrimitiveTypes.Int64, Nullable: true}
	in, err := arrowipc.EncodeSchema(arrow.NewSchema([]arrow.Field{i64, ts}, nil))
	if err != nil {
		t.Fatal(err)
	}
	out, err := arrowipc.EncodeSchema(arrow.NewSchema([]arrow.Field{i64, ts, y}, nil))
	if err != nil {
		t.Fatal(err)
	}
	call := &planpb.Expr{Kind: &planpb.Expr_Udf{Udf: &planpb.UdfExpr{Udf: goworker.UDF("affine", goworker.Affine, arrow.PrimitiveTypes.Int64), Args: []*planpb.Expr{columnExpr("id")}}}}
	cols := []*planpb.NamedExpr{{Name: "id", Expr: columnExpr("id")}, {Name: "ts", Expr: columnExpr("ts")}}
	nodes := []*planpb.Node{
		{Id: 1, Name: "datagen", OutputSchema: in, Kind: &planpb.Node_Source{Source: &planpb.Source{
			Kind: &planpb.Source_Datagen{Datagen: &planpb.DatagenSource{Rows: rows}}}}},
		{Id: 2, Uid: "ts", Name: "wm", OutputSchema: in, Inputs: []*planpb.Input{{Node: 1}},
			Kind: &planpb.Node_WatermarkAssigner{WatermarkAssigner: &planpb.WatermarkAssigner{TimeColumn: "ts", MaxOutOfOrdernessMs: delay}}},
		{Id: 3, Name: "with_column(y)", OutputSchema: out, Inputs: []*planpb.Input{{Node: 2}},
			Kind: &planpb.Node_Select{Select: &planpb.Select{Columns: append(cols, &planpb.NamedExpr{Name: "y", Expr: call})}}},
		{Id: 4, Name: "record", OutputSchema: out, Inputs: []*planpb.Input{{Node: 3}},
			Kind: &planpb.Node_Select{Select: &planpb.Select{Columns: append(cols, &planpb.NamedExpr{Name: "y", Expr: columnExpr("y")})}}},
		{Id: 5, Name: "collect", OutputSchema: out, Inputs: []*planpb.Input{{Node: 4}},
			Kind: &planpb.Node_Sink{Sink: &planpb.Sink{Kind: &planpb.Sink_Collect{Collect: &planpb.CollectSink{}}}}},
	}
	g, err := plan.PlanWire(&planpb.JobPlan{Name: "udf and watermarks", DefaultParallelism: 1, Nodes: nodes}, plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu     sync.Mutex
		maxTS  = int64(-1)
		wms    []watermark.Watermark
		errs   []string
		rowsIn int64
	)
	made := make(chan *bridgetest.Runner, 4)
	base := operators.Registry(operators.Options{
		SourceBatchRows: 100, BundleSize: 1 << 20, BundleTime: time.Hour,
		WatermarkInterval: time.Nanosecond, // a watermark after every batch
		NewRunner:         fakeAffine(made, func(r *bridgetest.Runner) { r.HoldUntilFlush = true }),
		Collect: func(_ *plan.Operator, _ int, b arrow.RecordBatch) error {
			rowsIn += b.NumRows()
			b.Release()
			return nil
		},
	})
	reg, err := base.With(operator.Kind{Kind: plan.KindSelect,
		Schema: func(_ *plan.Operator, in []*arrow.Schema) (*arrow.Schema, error) { return in[0], nil },
		New: func(*operator.Context) (operator.Operator, error) {
			return &flushRecorder{delay: delay, mu: &mu, maxTS: &maxTS, wms: &wms, errors: &errs}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	j, err := Start(context.Background(), g, Options{Allocator: mem, Registry: reg, SourceBatchRows: 100, ChannelCapacity: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Wait(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, e := range errs {
		t.Error(e)
	}
	if rowsIn != rows {
		t.Errorf("collected %d rows, want %d", rowsIn, rows)
	}
	if len(wms) < 3 || wms[len(wms)-1] != watermark.MaxWatermark {
		t.Fatalf("watermarks %v: want several, the maximum last", wms)
	}
	t.Logf("%d watermarks at the recorder, last before MAX %v", len(wms), wms[len(wms)-2])
}
