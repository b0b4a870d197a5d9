package bundle

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/flinkgo/flinkgo/udf/bridge/bridgetest"
)

// A bundle that ends on size sends its rows and does not wait for their
// results: no Flush until something finishes every bundle.
func TestSizeTriggerEndsBundleWithoutFlush(t *testing.T) {
	h := newHarness(t, Options{BatchSize: 10, BundleSize: 20}, true, nil) // results ready at once
	defer h.mem.AssertSize(t, 0)

	if err := h.process(t, 0, 25); err != nil {
		t.Fatal(err)
	}
	if n := h.log.Count("runner.Flush"); n != 0 {
		t.Fatalf("%d flushes after a bundle ended on size, want 0", n)
	}
	if _, vals := h.out.emitted(); !slices.Equal(vals, seq(0, 20)) {
		t.Fatalf("emitted %v after the size trigger, want rows 0..19", vals)
	}
	if err := h.op.FinishBundle(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, want := h.runner.ProcessedRows(), []int64{10, 10, 5}; !slices.Equal(got, want) {
		t.Fatalf("batches of %v rows, want %v", got, want)
	}
	if n := h.log.Count("runner.Flush"); n != 1 {
		t.Fatalf("%d flushes, want 1 (FinishBundle)", n)
	}
	if err := h.op.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, vals := h.out.emitted(); !slices.Equal(vals, seq(0, 25)) {
		t.Fatalf("emitted %v, want 0..24 in order", vals)
	}
}

// A bundle that ended on size keeps the deadline until its results are out,
// so the timer emits them when the stream goes idle; FinishBundle then
// drains every bundle.
func TestEndedBundleKeepsItsDeadlineUntilItsResultsAreOut(t *testing.T) {
	clock := &fakeClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	first := clock.Now()
	h := newHarness(t, Options{BatchSize: 10, BundleSize: 20, BundleTime: time.Second, Now: clock.Now}, true,
		func(r *bridgetest.Runner) { r.HoldUntilFlush = true })
	defer h.mem.AssertSize(t, 0)

	if err := h.process(t, 0, 20); err != nil { // ends the first bundle on size
		t.Fatal(err)
	}
	if deadline, ok := h.op.BundleDeadline(); !ok || !deadline.Equal(first.Add(time.Second)) {
		t.Fatalf("BundleDeadline() = %v, %v with the ended bundle's results out; want %v", deadline, ok, first.Add(time.Second))
	}
	clock.advance(500 * time.Millisecond)
	if err := h.process(t, 20, 5); err != nil { // opens the second
		t.Fatal(err)
	}
	if deadline, _ := h.op.BundleDeadline(); !deadline.Equal(first.Add(time.Second)) {
		t.Fatalf("BundleDeadline() = %v, want the older bundle's %v", deadline, first.Add(time.Second))
	}
	if _, vals := h.out.emitted(); len(vals) != 0 {
		t.Fatalf("emitted %v before any result came back", vals)
	}
	if err := h.op.FinishBundle(context.Background()); err != nil { // the timer
		t.Fatal(err)
	}
	if _, ok := h.op.BundleDeadline(); ok {
		t.Fatal("a deadline after FinishBundle emitted every result")
	}
	if _, vals := h.out.emitted(); !slices.Equal(vals, seq(0, 25)) {
		t.Fatalf("emitted %v after FinishBundle, want 0..24", vals)
	}
	if n := h.log.Count("runner.Flush"); n != 1 {
		t.Fatalf("%d flushes, want 1", n)
	}
	if err := h.op.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestEffectiveBatchSizeIsMinOfBatchAndBundle(t *testing.T) {
	h := newHarness(t, Options{BatchSize: 100, BundleSize: 30}, true, nil)
	defer h.mem.AssertSize(t, 0)

	if err := h.process(t, 0, 70); err != nil {
		t.Fatal(err)
	}
	if err := h.op.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, want := h.runner.ProcessedRows(), []int64{30, 30, 10}; !slices.Equal(got, want) {
		t.Fatalf("batches of %v rows, want %v", got, want)
	}
	if n := h.log.Count("runner.Flush"); n != 1 {
		t.Fatalf("%d flushes, want 1: bundles that end on size do not flush, close does", n)
	}
	if _, vals := h.out.emitted(); !slices.Equal(vals, seq(0, 70)) {
		t.Fatalf("emitted %v, want 0..69 in order", vals)
	}
}

// fakeClock is a settable Options.Now.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func TestTimeTriggerEndsBundle(t *testing.T) {
	clock := &fakeClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	start := clock.Now()
	h := newHarness(t, Options{BatchSize: 10, BundleTime: time.Second, Now: clock.Now}, true, nil)
	defer h.mem.AssertSize(t, 0)

	if _, ok := h.op.BundleDeadline(); ok {
		t.Fatal("deadline before any row")
	}
	if err := h.process(t, 0, 5); err != nil {
		t.Fatal(err)
	}
	deadline, ok := h.op.BundleDeadline()
	if !ok || !deadline.Equal(start.Add(time.Second)) {
		t.Fatalf("BundleDeadline() = %v, %v; want first row + 1s = %v", deadline, ok, start.Add(time.Second))
	}
	clock.advance(999 * time.Millisecond)
	if err := h.process(t, 5, 1); err != nil {
		t.Fatal(err)
	}
	if n := h.log.Count("runner.Flush"); n != 0 {
		t.Fatalf("flushed before BundleTime passed")
	}
	clock.advance(time.Millisecond)
	if err := h.process(t, 6, 1); err != nil {
		t.Fatal(err)
	}
	if n := h.log.Count("runner.Flush"); n != 0 {
		t.Fatalf("%d flushes once BundleTime passed, want 0: the bundle ends without waiting", n)
	}
	if got, want := h.runner.ProcessedRows(), []int64{7}; !slices.Equal(got, want) {
		t.Fatalf("batches of %v rows, want %v", got, want)
	}
	if _, vals := h.out.emitted(); !slices.Equal(vals, seq(0, 7)) {
		t.Fatalf("emitted %v once the bundle ended, want 0..6", vals)
	}
	if _, ok := h.op.BundleDeadline(); ok {
		t.Fatal("deadline after the bundle's results were all emitted")
	}

	// The next bundle's clock starts with its own first row.
	clock.advance(time.Hour)
	if err := h.process(t, 7, 1); err != nil {
		t.Fatal(err)
	}
	if deadline, _ := h.op.BundleDeadline(); !deadline.Equal(clock.Now().Add(time.Second)) {
		t.Fatalf("next bundle's deadline %v, want %v", deadline, clock.Now().Add(time.Second))
	}
	if err := h.op.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, vals := h.out.emitted(); !slices.Equal(vals, seq(0, 8)) {
		t.Fatalf("emitted %v", vals)
	}
}

func TestExplicitFinishBundle(t *testing.T) {
	h := newHarness(t, Options{BatchSize: 10}, true, func(r *bridgetest.Runner) { r.HoldUntilFlush = true })
	defer h.mem.AssertSize(t, 0)

	if err := h.op.FinishBundle(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := h.log.Count("runner.Flush"); n != 0 {
		t.Fatal("flushed an empty bundle")
	}
	if err := h.process(t, 0, 3); err != nil {
		t.Fatal(err)
	}
	if _, vals := h.out.emitted(); len(vals) != 0 {
		t.Fatalf("emitted %v before the bundle finished", vals)
	}
	if err := h.op.FinishBundle(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, vals := h.out.emitted(); !slices.Equal(vals, seq(0, 3)) {
		t.Fatalf("emitted %v after FinishBundle, want 0..2", vals)
	}
	if err := h.op.FinishBundle(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := h.log.Count("runner.Flush"); n != 1 {
		t.Fatalf("%d flushes, want 1: nothing was pending the second time", n)
	}
	if err := h.op.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestProcessBatchEmitsAvailableResults(t *testing.T) {
	h := newHarness(t, Options{BatchSize: 4}, true, nil) // results ready at once
	defer h.mem.AssertSize(t, 0)
	if err := h.process(t, 0, 10); err != nil {
		t.Fatal(err)
	}
	if n := h.log.Count("runner.Flush"); n != 0 {
		t.Fatal("flushed before any trigger")
	}
	if seqs, vals := h.out.emitted(); !slices.Equal(vals, seq(0, 8)) || !slices.Equal(seqs, seq(0, 2)) {
		t.Fatalf("emitted seqs %v values %v, want the two full batches", seqs, vals)
	}
	if err := h.op.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// A large input batch is sent as many batches; each result that has come
// back leaves before the next batch goes out, not after the last one, so
// downstream operators (and the job's row counts) see the UDF's progress.
func TestResultsLeaveBetweenTheBatchesOfOneInput(t *testing.T) {
	h := newHarness(t, Options{BatchSize: 4}, true, nil) // results ready at once
	defer h.mem.AssertSize(t, 0)
	if err := h.process(t, 0, 12); err != nil { // three batches of 4
		t.Fatal(err)
	}
	var calls []string
	for _, c := range h.log.Snapshot() {
		if c == "runner.Process" || c == "emit" {
			calls = append(calls, c)
		}
	}
	want := []string{"runner.Process", "emit", "runner.Process", "emit", "runner.Process", "emit"}
	if !slices.Equal(calls, want) {
		t.Fatalf("calls %v, want each result emitted before the next batch is sent", calls)
	}
	if err := h.op.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestResultsInInputOrder(t *testing.T) {
	h := newHarness(t, Options{BatchSize: 7, BundleSize: 20}, true, func(r *bridgetest.Runner) { r.HoldUntilFlush = true })
	defer h.mem.AssertSize(t, 0)
	var next int64
	for _, n := range []int64{1, 13, 6, 40, 2, 9} {
		if err := h.process(t, next, n); err != nil {
			t.Fatal(err)
		}
		next += n
	}
	if err := h.op.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	seqs, vals := h.out.emitted()
	if !slices.Equal(vals, seq(0, next)) {
		t.Fatalf("emitted %v, want 0..%d in order", vals, next-1)
	}
	if !slices.Equal(seqs, seq(0, int64(len(seqs)))) {
		t.Fatalf("result seqs %v, want 0, 1, 2, ...", seqs)
	}
	for i, rows := range h.runner.ProcessedRows() {
		if rows > 7 {
			t.Fatalf("batch %d has %d rows, over BatchSize 7", i, rows)
		}
	}
}
