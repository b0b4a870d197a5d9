package bundle

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/udf/bridge"
	"github.com/flinkgo/flinkgo/udf/bridge/bridgetest"
)

// hangGuard bounds every wait in tests. It only turns a hang into a failure;
// no test asserts how long anything takes.
const hangGuard = 5 * time.Second

// recordingExecutor wraps an Executor and logs its shutdowns.
type recordingExecutor struct {
	Executor
	log *bridgetest.CallLog
}

func (e recordingExecutor) Shutdown() {
	e.log.Add("executor.Shutdown")
	e.Executor.Shutdown()
}

func (e recordingExecutor) ShutdownNow() {
	e.log.Add("executor.ShutdownNow")
	e.Executor.ShutdownNow()
}

// collector is the emit callback: it logs and records every result.
type collector struct {
	log *bridgetest.CallLog
	// failAt makes the emit of this result (counted from 1) return errEmit.
	failAt int

	mu     sync.Mutex
	seqs   []int64
	values []int64
}

var errEmit = fmt.Errorf("sink refused the result")

func (c *collector) emit(res bridge.Result) error {
	defer res.Batch.Release()
	c.log.Add("emit")
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seqs = append(c.seqs, res.Seq)
	if c.failAt > 0 && len(c.seqs) == c.failAt {
		return errEmit
	}
	c.values = append(c.values, res.Batch.Column(0).(*array.Int64).Int64Values()...)
	return nil
}

func (c *collector) emitted() (seqs, values []int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.seqs), slices.Clone(c.values)
}

var testSchema = arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil)

// makeBatch returns a batch of one int64 column holding start, start+1, ...
func makeBatch(t testing.TB, mem memory.Allocator, start, n int64) arrow.RecordBatch {
	t.Helper()
	b := array.NewInt64Builder(mem)
	defer b.Release()
	for i := range n {
		b.Append(start + i)
	}
	col := b.NewArray()
	defer col.Release()
	return array.NewRecordBatch(testSchema, []arrow.Array{col}, n)
}

// values returns the int64 column of b.
func values(b arrow.RecordBatch) []int64 {
	return slices.Clone(b.Column(0).(*array.Int64).Int64Values())
}

// seq returns start, start+1, ..., start+n-1.
func seq(start, n int64) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = start + int64(i)
	}
	return out
}

// waitFor fails the test unless ch delivers within hangGuard.
func waitFor[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(hangGuard):
		t.Fatalf("hang: %s", what)
		panic("unreachable")
	}
}

// harness is an operator with a fake runner, a recording executor and a
// collector sharing one log.
type harness struct {
	op     *Operator
	runner *bridgetest.Runner
	log    *bridgetest.CallLog
	out    *collector
	mem    *memory.CheckedAllocator
}

// newHarness builds an operator; cancelable picks whether the runner has
// Cancel; tweak sets runner knobs before use.
func newHarness(t *testing.T, opts Options, cancelable bool, tweak func(*bridgetest.Runner)) *harness {
	t.Helper()
	h := &harness{log: &bridgetest.CallLog{}, mem: memory.NewCheckedAllocator(memory.NewGoAllocator())}
	h.runner = bridgetest.NewRunner(h.log)
	if tweak != nil {
		tweak(h.runner)
	}
	h.out = &collector{log: h.log}
	if opts.Name == "" {
		opts.Name = `udf "score" (operator 3, subtask 1)`
	}
	opts.Allocator = h.mem
	opts.Executor = recordingExecutor{Executor: NewFlushExecutor(), log: h.log}
	var runner bridge.Runner = h.runner
	if cancelable {
		runner = bridgetest.Cancelable{Runner: h.runner}
	}
	op, err := NewOperator(opts, runner, h.out.emit)
	if err != nil {
		t.Fatal(err)
	}
	h.op = op
	if err := op.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	return h
}

// process sends a batch of n rows starting at start.
func (h *harness) process(t *testing.T, start, n int64) error {
	t.Helper()
	b := makeBatch(t, h.mem, start, n)
	defer b.Release()
	return h.op.ProcessBatch(context.Background(), b)
}
