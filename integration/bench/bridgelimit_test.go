package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/integration/testkit"
	"github.com/flinkgo/flinkgo/udf/bridge/pluginrunner"
	"github.com/flinkgo/flinkgo/udf/bridge/proto/workerpb"
)

// limitRowsEnv sets the rows of each numeric run of BenchmarkBridgeLimit
// (the row UDF runs a quarter of them); the default takes a few minutes,
// 200000 a quick look.
const limitRowsEnv = "FLINKGO_BENCH_LIMIT_ROWS"

const limitUDFSource = `
import pyarrow as pa
from flinkgo import udf

@udf("float64", func_type="arrow")
def identity(x):
    return x

@udf("float64", func_type="arrow")
def numpy_affine(x):
    return pa.array(x.to_numpy() * 2 + 1)

@udf("float64", func_type="pandas")
def pandas_affine(x):
    return x * 2 + 1

@udf("string")
def upper(s):
    return s.upper()
`

// limitFuncs pairs each UDF with the function of ipc_limit.py it is
// measured against.
var limitFuncs = []struct{ udf, limit, limitRowUDF string }{
	{udf: "identity", limit: "identity"},
	{udf: "numpy_affine", limit: "numpy"},
	{udf: "pandas_affine", limit: "pandas"},
	{udf: "upper", limit: "upper", limitRowUDF: "upper-inproc"},
}

var limitBatchSizes = []int{10_000, 65_536, 262_144}

// BenchmarkBridgeLimit is issue 15's item 1: the bridge (Go host sending to
// one Python worker, a bundle operator in front, as BridgeThroughput)
// against the physical limit that ipc_limit.py measures on the same machine
// in the same run: two Python processes passing the same Arrow IPC batches
// over a Unix socket, pipelined, the receiver applying the same function.
// It reports rows/s and "%limit", the bridge's throughput as a percentage
// of the limit; the row UDF also as "%loop", against the plain loop
// pa.array([s.upper() for s in col.to_pylist()]) in one process.
//
//	go test -run '^$' -bench BridgeLimit -benchtime 1x ./integration/bench/
//	FLINKGO_BENCH_LIMIT_ROWS=200000 go test -run '^$' -bench BridgeLimit -benchtime 1x ./integration/bench/
func BenchmarkBridgeLimit(b *testing.B) {
	rows := 4_000_000
	if v := os.Getenv(limitRowsEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("%s=%q: want a positive number of rows", limitRowsEnv, v)
		}
		rows = n
	}
	specs := testkit.UDFSpecs(b, limitUDFSource)
	limits := map[limitKey]float64{}
	for _, f := range limitFuncs {
		for _, batchSize := range limitBatchSizes {
			// The limit right before the bridge runs it is compared with:
			// on a shared machine the load changes from minute to minute.
			measureLimits(b, limits, rows, batchSize, f.limit, f.limitRowUDF)
			for _, tr := range benchTransports {
				b.Run(fmt.Sprintf("%s/batch=%d/transport=%s", f.udf, batchSize, tr), func(b *testing.B) {
					n := rows
					if f.limitRowUDF != "" {
						n = rows / 4
					}
					var total float64
					for b.Loop() {
						total += bridgeRowsPerSecond(b, specs[f.udf], tr, batchSize, n)
					}
					got := total / float64(b.N)
					b.ReportMetric(got, "rows/s")
					b.ReportMetric(limits[limitKey{f.limit, batchSize}], "limit-rows/s")
					b.ReportMetric(100*got/limits[limitKey{f.limit, batchSize}], "%limit")
					if f.limitRowUDF != "" {
						b.ReportMetric(100*got/limits[limitKey{f.limitRowUDF, batchSize}], "%loop")
					}
				})
			}
		}
	}
}

// benchTransports are the batch transports the limit benchmark compares.
var benchTransports = []pluginrunner.Transport{pluginrunner.TransportUnixSocket, pluginrunner.TransportSharedMemory}

type limitKey struct {
	fn    string
	batch int
}

// measureLimits runs ipc_limit.py for funcs at one batch size and adds
// its figures to limits.
func measureLimits(b *testing.B, limits map[limitKey]float64, rows, batchSize int, funcs ...string) {
	b.Helper()
	args := []string{filepath.Join(testkit.RepoRoot(b), "integration", "bench", "ipc_limit.py"),
		"--rows", strconv.Itoa(rows), "--batch", strconv.Itoa(batchSize), "--func"}
	for _, f := range funcs {
		if f != "" {
			args = append(args, f)
		}
	}
	cmd := exec.Command(testkit.Python(b), args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("ipc_limit.py: %v\n%s", err, stderr.String())
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var r struct {
			Func     string  `json:"func"`
			Batch    int     `json:"batch"`
			RowsPerS float64 `json:"rows_per_s"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			b.Fatalf("ipc_limit.py printed %q: %v", sc.Text(), err)
		}
		limits[limitKey{r.Func, r.Batch}] = r.RowsPerS
	}
}

// bridgeRowsPerSecond sends rows through one worker running spec and
// returns rows/s after a warm-up batch.
func bridgeRowsPerSecond(b *testing.B, spec *workerpb.UdfSpec, tr pluginrunner.Transport, batchSize, rows int) float64 {
	mem := memory.NewGoAllocator()
	var batch arrow.RecordBatch
	var call *workerpb.UdfCall
	if spec.GetName() == "upper" {
		batch = stringBatch(mem, batchSize)
		call = testkit.Call(spec, "u", "s")
	} else {
		batch = float64Batch(mem, batchSize)
		call = testkit.Call(spec, "y", "x")
	}
	defer batch.Release()
	opts := pluginrunner.Options{
		Python:    testkit.Python(b),
		Transport: tr,
		Logger:    slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	batches := max(rows/batchSize, 8)
	in := make(chan arrow.RecordBatch, 2)
	warmedUp := make(chan struct{})
	var mu sync.Mutex
	var seen int64
	var start, end time.Time
	go func() {
		defer close(in)
		batch.Retain()
		in <- batch
		<-warmedUp
		for range batches {
			batch.Retain()
			in <- batch
		}
	}()
	err := bridgeAlone(context.Background(), []*workerpb.UdfCall{call}, batch.Schema(), 1, batchSize, 0, opts, mem, in, func(n int64) {
		mu.Lock()
		defer mu.Unlock()
		seen += n
		if seen == int64(batchSize) {
			start = time.Now()
			close(warmedUp)
		}
		end = time.Now()
	})
	if err != nil {
		b.Fatal(err)
	}
	return float64(seen-int64(batchSize)) / end.Sub(start).Seconds()
}

// stringBatch is one string column "s" of intStringBatch's words (the
// words ipc_limit.py's upper runs on).
func stringBatch(mem memory.Allocator, rows int) arrow.RecordBatch {
	full := intStringBatch(mem, rows)
	defer full.Release()
	schema := arrow.NewSchema([]arrow.Field{full.Schema().Field(1)}, nil)
	return array.NewRecordBatch(schema, []arrow.Array{full.Column(1)}, int64(rows))
}
