// Command bridge pushes a generated data set of sensor readings through two
// fused pandas UDFs (examples/python/bridge_udfs.py) on real Python workers,
// run on the runtime through the Go API (package pipeline),
// prints the first results and the throughput. It runs with `make example`.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/pipeline"
	"github.com/flinkgo/flinkgo/udf/bridge/pluginrunner"
	"github.com/flinkgo/flinkgo/udf/bridge/proto/workerpb"
	"github.com/flinkgo/flinkgo/udf/pyspec"
)

func main() {
	rows := flag.Int("rows", 5_000_000, "readings to generate")
	workers := flag.Int("workers", 2, "worker processes (the UDFs set no concurrency)")
	udfFile := flag.String("udfs", "examples/python/bridge_udfs.py", "Python file declaring the UDFs")
	flag.Parse()
	if err := run(*rows, *workers, *udfFile); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func run(rows, workers int, udfFile string) error {
	python := os.Getenv(pluginrunner.PythonEnv)
	if python == "" {
		python = "python3"
	}
	specs, err := pyspec.Declare(context.Background(), python, udfFile)
	if err != nil {
		return err
	}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "sensor", Type: arrow.PrimitiveTypes.Int64},
		{Name: "celsius", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
	chain := pipeline.Chain{
		InputSchema: schema,
		Calls: []*workerpb.UdfCall{
			{Udf: specs["to_fahrenheit"], Args: []string{"celsius"}, Output: "fahrenheit"},
			{Udf: specs["classify"], Args: []string{"fahrenheit"}, Output: "label"},
		},
	}
	opts := pipeline.Options{
		Parallelism: workers,
		Name:        "sensors",
		Runner: pluginrunner.Options{
			Python: python,
			Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		},
	}
	resolved, err := pipeline.Resolve(chain, opts)
	if err != nil {
		return err
	}
	fmt.Printf("running to_fahrenheit+classify on %d worker(s), batch size %d, over %d generated readings\n",
		resolved.Parallelism, resolved.BatchSize, rows)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	in := make(chan arrow.RecordBatch, 4)
	go generate(ctx, schema, rows, in)

	start := time.Now()
	var seen int64
	counts := map[string]int64{}
	var sample []string
	err = pipeline.Run(ctx, chain, opts, in, func(b arrow.RecordBatch) error {
		defer b.Release()
		f := b.Column(0).(*array.Float64)
		labels := b.Column(1).(*array.String)
		for i := range int(b.NumRows()) {
			counts[labels.Value(i)]++
			if len(sample) < 5 {
				sample = append(sample, fmt.Sprintf("  row %d: %.2f °F → %s", seen+int64(i), f.Value(i), labels.Value(i)))
			}
		}
		seen += b.NumRows()
		return nil
	})
	if err != nil {
		return err
	}
	elapsed := time.Since(start)
	fmt.Println("first results:")
	fmt.Println(strings.Join(sample, "\n"))
	fmt.Printf("labels: cold=%d mild=%d hot=%d\n", counts["cold"], counts["mild"], counts["hot"])
	fmt.Printf("%d rows in %s (worker start included): %.0f rows/s\n", seen, elapsed.Round(time.Millisecond), float64(seen)/elapsed.Seconds())
	return nil
}

// generate sends readings of 100 sensors in batches of 50 000 rows.
func generate(ctx context.Context, schema *arrow.Schema, rows int, out chan<- arrow.RecordBatch) {
	defer close(out)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	const batch = 50_000
	for start := 0; start < rows; start += batch {
		for i := start; i < min(start+batch, rows); i++ {
			b.Field(0).(*array.Int64Builder).Append(int64(i % 100))
			b.Field(1).(*array.Float64Builder).Append(float64(i%600)/10 - 10)
		}
		select {
		case out <- b.NewRecordBatch():
		case <-ctx.Done():
			return
		}
	}
}
