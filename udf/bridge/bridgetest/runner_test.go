package bridgetest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/udf/bridge"
	"github.com/flinkgo/flinkgo/udf/bridge/bridgetest"
)

// hangGuard only turns a hang into a failure; nothing asserts durations.
const hangGuard = 5 * time.Second

var schema = arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil)

func batch(mem memory.Allocator, vals ...int64) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues(vals, nil)
	return b.NewRecordBatch()
}

func TestEchoesInOrderAndWakesTakeResult(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	r := bridgetest.NewRunner(nil)
	r.HoldUntilFlush = true
	for seq := range int64(3) {
		b := batch(mem, seq)
		if err := r.Process(context.Background(), seq, b); err != nil {
			t.Fatal(err)
		}
		b.Release()
	}
	if _, ok, _ := r.TryTakeResult(); ok {
		t.Fatal("a held result was delivered before Flush")
	}
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	r.NotifyNoMoreResults()
	for want := range int64(3) {
		res, err := r.TakeResult(context.Background())
		if err != nil || res.Seq != want || res.Batch.Column(0).(*array.Int64).Value(0) != want {
			t.Fatalf("result %d: %+v, %v", want, res, err)
		}
		res.Batch.Release()
	}
	if _, err := r.TakeResult(context.Background()); !errors.Is(err, bridge.ErrNoMoreResults) {
		t.Fatalf("after the results: %v, want ErrNoMoreResults", err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if got := r.Log().Count("runner.Process"); got != 3 {
		t.Fatalf("logged %d Process calls, want 3", got)
	}
}

func TestTransformScriptsResultsAndErrors(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	errUDF := errors.New("udf raised on batch 1")
	r := bridgetest.NewRunner(nil)
	r.Transform = func(seq int64, in arrow.RecordBatch) (arrow.RecordBatch, error) {
		if seq == 1 {
			return nil, errUDF
		}
		return batch(mem, in.Column(0).(*array.Int64).Value(0)*10), nil
	}
	for seq := range int64(2) {
		b := batch(mem, 7)
		if err := r.Process(context.Background(), seq, b); err != nil {
			t.Fatalf("Process %d: %v (a scripted error shows at the next call)", seq, err)
		}
		b.Release()
	}
	if _, err := r.TakeResult(context.Background()); !errors.Is(err, errUDF) {
		t.Fatalf("TakeResult: %v, want the scripted error", err)
	}
	if err := r.Flush(); !errors.Is(err, errUDF) {
		t.Fatalf("Flush: %v, want the scripted error", err)
	}
	_ = r.Close()

	r = bridgetest.NewRunner(nil)
	r.Transform = func(int64, arrow.RecordBatch) (arrow.RecordBatch, error) { return batch(mem, 70), nil }
	b := batch(mem, 7)
	defer b.Release()
	if err := r.Process(context.Background(), 0, b); err != nil {
		t.Fatal(err)
	}
	res, ok, err := r.TryTakeResult()
	if !ok || err != nil || res.Batch.Column(0).(*array.Int64).Value(0) != 70 {
		t.Fatalf("scripted result: %+v %v %v", res, ok, err)
	}
	res.Batch.Release()
	_ = r.Close()
}

func TestCancelWakesBlockedFlushAndTakeResult(t *testing.T) {
	r := bridgetest.NewRunner(nil)
	r.BlockFlush = true
	c := bridgetest.Cancelable{Runner: r}
	flushed := make(chan error, 1)
	go func() { flushed <- c.Flush() }()
	taken := make(chan error, 1)
	go func() {
		_, err := c.TakeResult(context.Background())
		taken <- err
	}()
	select {
	case <-r.FlushStarted():
	case <-time.After(hangGuard):
		t.Fatal("hang: Flush did not start")
	}
	bridge.CancelRunner(c)
	for what, ch := range map[string]chan error{"Flush": flushed, "TakeResult": taken} {
		select {
		case err := <-ch:
			if !errors.Is(err, bridge.ErrClosed) {
				t.Errorf("%s after Cancel: %v, want ErrClosed", what, err)
			}
		case <-time.After(hangGuard):
			t.Fatalf("hang: %s after Cancel", what)
		}
	}
	if r.Log().Count("runner.Cancel") != 1 || r.Log().Count("runner.Close") != 0 {
		t.Fatalf("log %v, want one Cancel and no Close", r.Log().Snapshot())
	}
}

func TestFailAndSecondCloseWaitsForFirst(t *testing.T) {
	errLost := errors.New("worker lost")
	errClose := errors.New("teardown failed")
	r := bridgetest.NewRunner(nil)
	r.BlockClose = true
	r.CloseErr = errClose
	r.Fail(errLost)
	if err := r.Flush(); !errors.Is(err, errLost) {
		t.Fatalf("Flush after Fail: %v", err)
	}
	first, second := make(chan error, 1), make(chan error, 1)
	go func() { first <- r.Close() }()
	<-r.CloseStarted()
	go func() {
		err := r.Close()
		if !r.CloseReturned() {
			err = errors.New("second Close returned before the first")
		}
		second <- err
	}()
	r.ReleaseClose()
	for _, ch := range []chan error{first, second} {
		if err := <-ch; !errors.Is(err, errClose) {
			t.Fatalf("Close: %v, want %v", err, errClose)
		}
	}
}
