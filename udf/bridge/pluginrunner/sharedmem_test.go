package pluginrunner_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flinkgo/flinkgo/integration/testkit"
	"github.com/flinkgo/flinkgo/internal/poll"
	"github.com/flinkgo/flinkgo/udf/bridge/pluginrunner"
)

// sharedMapping is how the region shows in /proc/<pid>/maps.
const sharedMapping = "memfd:flinkgo-udf-batches"

// sharedMappings counts the shared regions pid has mapped.
func sharedMappings(t *testing.T, pid string) int {
	t.Helper()
	maps, err := os.ReadFile("/proc/" + pid + "/maps")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(maps), sharedMapping)
}

// waitNoSharedMappings waits until pid maps no shared region.
func waitNoSharedMappings(t *testing.T, pid string) {
	t.Helper()
	if !poll.Within(10*time.Second, func() bool { return sharedMappings(t, pid) == 0 }) {
		t.Fatalf("process %s still maps %d shared regions", pid, sharedMappings(t, pid))
	}
}

// Batches and results travel through the region, and however the runner
// ends (Close, Cancel, its worker SIGKILLed) neither the host nor a worker
// kept for reuse maps it afterwards; a memfd has no file to leave behind.
func TestSharedMemoryIsUsedAndLeavesNoMapping(t *testing.T) {
	eachWorker(t, func(t *testing.T, w worker) {
		for _, end := range []string{"close", "close-pooled", "cancel", "sigkill"} {
			t.Run(end, func(t *testing.T) {
				f := newFixture(t, w)
				f.transport = pluginrunner.TransportSharedMemory
				opts := f.options(int64Schema, testkit.Call(f.specs["plus_one"], "y", "x"))
				if end == "close-pooled" {
					pool := pluginrunner.NewPool(nil)
					defer pool.Close()
					opts.Pool, opts.IdleTimeout, opts.MaxIdle = pool, time.Hour, 1
				}
				r := f.open(opts)
				pid := strconv.Itoa(r.Pid())
				const batches = 10 // more than the window: slots are reused
				for seq := range int64(batches) {
					b := f.int64Batch(seq, seq+1)
					if err := r.Process(context.Background(), seq, b); err != nil {
						t.Fatal(err)
					}
					b.Release()
				}
				results, err := flushAndTake(t, r)
				if err != nil {
					t.Fatal(err)
				}
				for i, res := range results {
					col := res.Batch.Column(0).(*array.Int64)
					if col.Value(0) != int64(i)+1 || col.Value(1) != int64(i)+2 {
						t.Errorf("result %d is %v, want [%d %d]", i, col, i+1, i+2)
					}
					res.Batch.Release()
				}
				if in, out := pluginrunner.SharedCounts(r); in != batches || out != batches {
					t.Errorf("%d batches and %d results went through shared memory, want %d each", in, out, batches)
				}
				if n := sharedMappings(t, pid); n != 1 {
					t.Errorf("the worker maps %d shared regions while it runs, want 1", n)
				}
				switch end {
				case "close", "close-pooled":
					if err := r.Close(); err != nil {
						t.Fatal(err)
					}
				case "cancel":
					r.Cancel()
				case "sigkill":
					if err := syscall.Kill(r.Pid(), syscall.SIGKILL); err != nil {
						t.Fatal(err)
					}
					b := f.int64Batch(1)
					_ = r.Process(context.Background(), batches, b) // fails once the loss is seen, or not yet
					b.Release()
					_ = r.Flush()
					r.Cancel()
				}
				if n := sharedMappings(t, "self"); n != 0 {
					t.Errorf("the host still maps %d shared regions", n)
				}
				if end == "close-pooled" {
					// The idle worker unmapped it when the stream ended.
					waitNoSharedMappings(t, pid)
				} else if !testkit.WaitGone(r.Pid(), 10*time.Second) {
					t.Errorf("worker %s survived %s", pid, end)
				}
			})
		}
	})
}

// A UDF that keeps its input beyond its call (a pandas Series viewing the
// shared slot) must see it unchanged: the host stops writing that slot.
func TestSharedMemoryInputKeptByTheUDFStaysIntact(t *testing.T) {
	f := newFixture(t, pythonWorker(t))
	f.transport = pluginrunner.TransportSharedMemory
	specs := testkit.UDFSpecs(t, `
import pandas as pd
from flinkgo import udf

kept = []

@udf("int64", func_type="pandas")
def first_sum(x):
    kept.append(x)  # views the input batch, zero-copy
    return pd.Series([int(kept[0].sum())] * len(x))
`)
	r := f.runner(int64Schema, testkit.Call(specs["first_sum"], "y", "x"))
	defer func() {
		if err := r.Close(); err != nil {
			t.Error(err)
		}
	}()
	// The first batch alone, so its answer (and the slot's retention) is
	// in before the batches that would reuse its slot go out.
	first := f.int64Batch(1, 2, 3)
	defer first.Release()
	if err := r.Process(context.Background(), 0, first); err != nil {
		t.Fatal(err)
	}
	res, err := r.TakeResult(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	res.Batch.Release()
	later := f.int64Batch(100, 100, 100)
	defer later.Release()
	const batches = 9
	for seq := int64(1); seq < batches; seq++ {
		if err := r.Process(context.Background(), seq, later); err != nil {
			t.Fatal(err)
		}
	}
	results, err := flushAndTake(t, r)
	if err != nil {
		t.Fatal(err)
	}
	for i, res := range results {
		if got := res.Batch.Column(0).(*array.Int64).Value(0); got != 6 {
			t.Errorf("result %d: the kept first batch sums to %d, want 6: its memory was overwritten", i+1, got)
		}
		res.Batch.Release()
	}
	if in, _ := pluginrunner.SharedCounts(r); in == batches {
		t.Errorf("every batch went through shared memory: the kept slot was written again")
	}
}

// residentShared is the resident KiB of pid's shared region mappings.
func residentShared(t *testing.T, pid string) int64 {
	t.Helper()
	smaps, err := os.ReadFile("/proc/" + pid + "/smaps")
	if err != nil {
		t.Fatal(err)
	}
	var kib int64
	in := false
	for _, line := range strings.Split(string(smaps), "\n") {
		fields := strings.Fields(line)
		switch {
		case len(fields) > 0 && strings.Contains(fields[0], "-"):
			in = strings.Contains(line, sharedMapping)
		case in && len(fields) == 3 && fields[0] == "Rss:":
			n, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			kib += n
		}
	}
	return kib
}

// The region costs what its slots carried, not its size: pages exist once
// written. Logs the worker's footprint for 65 536-row float64 batches.
func TestSharedMemoryFootprintFollowsTheBatches(t *testing.T) {
	f := newFixture(t, pythonWorker(t))
	f.transport = pluginrunner.TransportSharedMemory
	schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Float64}}, nil)
	r := f.runner(schema, testkit.Call(f.specs["affine"], "y", "x"))
	defer func() {
		if err := r.Close(); err != nil {
			t.Error(err)
		}
	}()
	const rows = 65_536
	bld := array.NewFloat64Builder(f.mem)
	for i := range rows {
		bld.Append(float64(i))
	}
	col := bld.NewArray()
	bld.Release()
	batch := array.NewRecordBatch(schema, []arrow.Array{col}, rows)
	col.Release()
	defer batch.Release()
	const batches = 12
	for seq := range int64(batches) {
		if err := r.Process(context.Background(), seq, batch); err != nil {
			t.Fatal(err)
		}
	}
	flushAndRelease(t, r)
	if in, out := pluginrunner.SharedCounts(r); in != batches || out != batches {
		t.Fatalf("%d batches and %d results went through shared memory, want %d", in, out, batches)
	}
	worker, host := residentShared(t, strconv.Itoa(r.Pid())), residentShared(t, "self")
	// 4 input and 4 output slots, each written with a 512 KiB column and
	// its IPC framing; the region is 128 MiB.
	const slotKiB = rows*8/1024 + 8
	t.Logf("shared region resident: worker %d KiB, host %d KiB (8 slots of 65 536 float64 rows: about %d KiB)", worker, host, 8*slotKiB)
	if worker > 8*slotKiB || host > 8*slotKiB {
		t.Errorf("resident shared memory worker %d KiB, host %d KiB: more than the %d KiB the slots carried", worker, host, 8*slotKiB)
	}
}

// Batches go through shared memory without their schema, except when the
// schema has a dictionary-encoded field: those need the stream's dictionary
// messages, and must still arrive intact.
func TestSharedMemoryDictionaryInputKeepsItsStream(t *testing.T) {
	f := newFixture(t, pythonWorker(t))
	f.transport = pluginrunner.TransportSharedMemory
	dictType := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}
	schema := arrow.NewSchema([]arrow.Field{{Name: "s", Type: dictType, Nullable: true}}, nil)
	r := f.runner(schema, testkit.Call(f.specs["upper"], "u", "s"))
	defer func() {
		if err := r.Close(); err != nil {
			t.Error(err)
		}
	}()
	words := [][]string{{"ab", "cd", "ab"}, {"ef", "gh", "ef"}}
	for seq, batchWords := range words {
		bld := array.NewDictionaryBuilder(f.mem, dictType).(*array.BinaryDictionaryBuilder)
		for _, w := range batchWords {
			if err := bld.AppendString(w); err != nil {
				t.Fatal(err)
			}
		}
		col := bld.NewArray()
		bld.Release()
		b := array.NewRecordBatch(schema, []arrow.Array{col}, int64(col.Len()))
		col.Release()
		if err := r.Process(context.Background(), int64(seq), b); err != nil {
			t.Fatal(err)
		}
		b.Release()
	}
	results, err := flushAndTake(t, r)
	if err != nil {
		t.Fatal(err)
	}
	for i, res := range results {
		col := res.Batch.Column(0).(*array.String)
		for j, w := range words[i] {
			if got, want := col.Value(j), strings.ToUpper(w); got != want {
				t.Errorf("batch %d row %d: %q, want %q", i, j, got, want)
			}
		}
		res.Batch.Release()
	}
	if in, _ := pluginrunner.SharedCounts(r); in != int64(len(words)) {
		t.Errorf("%d of %d batches went through shared memory", in, len(words))
	}
}

// Where the region cannot be made (here: slots too large to map), the
// batches travel on the socket instead, and the job runs.
func TestSharedMemoryFallsBackToTheSocket(t *testing.T) {
	eachWorker(t, func(t *testing.T, w worker) {
		f := newFixture(t, w)
		f.transport = pluginrunner.TransportSharedMemory
		opts := f.options(int64Schema, testkit.Call(f.specs["plus_one"], "y", "x"))
		opts.SharedSlotBytes = 1 << 58 // 8 slots: 2 EiB, more than any address space
		r := f.open(opts)
		defer func() {
			if err := r.Close(); err != nil {
				t.Error(err)
			}
		}()
		b := f.int64Batch(1, 2)
		defer b.Release()
		if err := r.Process(context.Background(), 0, b); err != nil {
			t.Fatal(err)
		}
		results, err := flushAndTake(t, r)
		if err != nil {
			t.Fatal(err)
		}
		if len(results) != 1 || results[0].Batch.Column(0).(*array.Int64).Value(1) != 3 {
			t.Errorf("results %v, want one batch [2 3]", results)
		}
		for _, res := range results {
			res.Batch.Release()
		}
		if in, out := pluginrunner.SharedCounts(r); in != 0 || out != 0 {
			t.Errorf("%d batches and %d results went through a region that could not exist", in, out)
		}
	})
}
