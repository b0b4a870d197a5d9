package pluginrunner_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/integration/testkit"
	"github.com/flinkgo/flinkgo/udf/bridge"
	"github.com/flinkgo/flinkgo/udf/bridge/pluginrunner"
	"github.com/flinkgo/flinkgo/udf/bridge/proto/workerpb"
)

// lockedLog collects log records written from the runner's goroutines.
type lockedLog struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// A worker that dies under a UDF: its start is logged at debug, its exit
// at warn with the exit status, both tagged with operator, subtask and pid.
func TestWorkerStartAndUnexpectedExitAreLogged(t *testing.T) {
	testkit.NoLeakedWorkers(t)
	specs := testkit.UDFSpecs(t, `
import os
from flinkgo import udf

@udf("int64")
def die(x):
    os._exit(3)
`)
	var logs lockedLog
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil)
	r, err := pluginrunner.NewRunner(pluginrunner.Options{
		Calls:        []*workerpb.UdfCall{testkit.Call(specs["die"], "y", "x")},
		InputSchema:  schema,
		Python:       testkit.Python(t),
		Allocator:    mem,
		OperatorName: "op9",
		Subtask:      2,
		Logger:       slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Cancel()
	if err := r.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(mem, schema)
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1}, nil)
	batch := b.NewRecordBatch()
	b.Release()
	err = r.Process(context.Background(), 0, batch)
	batch.Release()
	if err == nil {
		err = r.Flush()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for err == nil {
		var res bridge.Result
		if res, err = r.TakeResult(ctx); res.Batch != nil {
			res.Batch.Release()
		}
	}
	if ctx.Err() != nil {
		t.Fatal("the runner did not report the dead worker")
	}
	tag := "udf=die operator=op9 subtask=2"
	pid := fmt.Sprintf("pid=%d", r.Pid())
	var started, exited bool
	for _, line := range strings.Split(logs.String(), "\n") {
		started = started || strings.Contains(line, `level=DEBUG msg="worker started" `+tag)
		exited = exited || (strings.Contains(line, `level=WARN msg="worker exited unexpectedly" `+tag) &&
			strings.Contains(line, `status="exit status 3"`) && strings.Contains(line, pid))
	}
	if !started || !exited {
		t.Errorf("want the worker's start at debug and its exit with status 3 at warn (runner error: %v):\n%s", err, logs.String())
	}
}
