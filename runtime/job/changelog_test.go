package job

import (
	"context"
	"encoding/csv"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/internal/arrowipc"
	"github.com/flinkgo/flinkgo/runtime/config"
	"github.com/flinkgo/flinkgo/runtime/operators"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
)

const (
	changelogKeys    = 37
	changelogBuckets = 5
)

// bucketCounts plans datagen(rows) → k = id % 37 → key_by(k).agg(sum(id)
// AS total, min(id) AS lo, max(id) AS hi) emitting updates → bucket =
// total % 5 → key_by(bucket).agg(count, min(lo), max(hi), sum(total))
// emitting updates → CSV files with changelog (an upsert stream) in out,
// at parallelism p: an aggregation over the retract stream of another,
// whose keys move between buckets.
func bucketCounts(t *testing.T, rows int64, rowsPerSecond float64, p int, out string, cfg map[string]string) *plan.Graph {
	t.Helper()
	schema := func(names ...string) []byte {
		fields := make([]arrow.Field, len(names))
		for i, n := range names {
			fields[i] = arrow.Field{Name: n, Type: arrow.PrimitiveTypes.Int64, Nullable: true}
		}
		b, err := arrowipc.EncodeSchema(arrow.NewSchema(fields, nil))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	modulo := func(column string, n int64) *planpb.Expr {
		lit := &planpb.Expr{Kind: &planpb.Expr_Literal{Literal: &planpb.Literal{Value: &planpb.Literal_IntValue{IntValue: n}}}}
		return &planpb.Expr{Kind: &planpb.Expr_Call{Call: &planpb.Call{Function: "modulo", Args: []*planpb.Expr{columnExpr(column), lit}}}}
	}
	hash := func(node int32, key string) []*planpb.Input {
		return []*planpb.Input{{Node: node, Partitioning: &planpb.Partitioning{Kind: planpb.Partitioning_HASH, Keys: []string{key}}}}
	}
	nodes := []*planpb.Node{
		{Id: 1, Uid: "numbers", Name: "datagen", OutputSchema: schema("id"),
			Kind: &planpb.Node_Source{Source: &planpb.Source{Kind: &planpb.Source_Datagen{Datagen: &planpb.DatagenSource{Rows: rows, RowsPerSecond: rowsPerSecond}}}}},
		{Id: 2, Uid: "keyed", Name: "with_column(k)", OutputSchema: schema("id", "k"), Inputs: []*planpb.Input{{Node: 1}},
			Kind: &planpb.Node_Select{Select: &planpb.Select{Columns: []*planpb.NamedExpr{{Name: "id", Expr: columnExpr("id")}, {Name: "k", Expr: modulo("id", changelogKeys)}}}}},
		{Id: 3, Uid: "sums", Name: "sums", Inputs: hash(2, "k"), OutputSchema: schema("k", "total", "lo", "hi"),
			Kind: &planpb.Node_KeyedAggregate{KeyedAggregate: &planpb.KeyedAggregate{Keys: []string{"k"}, Emit: planpb.KeyedAggregate_EMIT_UPDATES, Aggregates: []*planpb.Aggregate{
				{Function: "sum", Column: "id", Name: "total"}, {Function: "min", Column: "id", Name: "lo"}, {Function: "max", Column: "id", Name: "hi"},
			}}}},
		{Id: 4, Uid: "bucketed", Name: "with_column(bucket)", OutputSchema: schema("k", "total", "lo", "hi", "bucket"), Inputs: []*planpb.Input{{Node: 3}},
			Kind: &planpb.Node_Select{Select: &planpb.Select{Columns: []*planpb.NamedExpr{
				{Name: "k", Expr: columnExpr("k")}, {Name: "total", Expr: columnExpr("total")}, {Name: "lo", Expr: columnExpr("lo")},
				{Name: "hi", Expr: columnExpr("hi")}, {Name: "bucket", Expr: modulo("total", changelogBuckets)},
			}}}},
		{Id: 5, Uid: "buckets", Name: "buckets", Inputs: hash(4, "bucket"), OutputSchema: schema("bucket", "keys", "lo", "hi", "total"),
			Kind: &planpb.Node_KeyedAggregate{KeyedAggregate: &planpb.KeyedAggregate{Keys: []string{"bucket"}, Emit: planpb.KeyedAggregate_EMIT_UPDATES, Aggregates: []*planpb.Aggregate{
				{Function: "count", Name: "keys"}, {Function: "min", Column: "lo", Name: "lo"}, {Function: "max", Column: "hi", Name: "hi"}, {Function: "sum", Column: "total", Name: "total"},
			}}}},
		{Id: 6, Uid: "out", Name: "write_csv", Inputs: []*planpb.Input{{Node: 5}}, OutputSchema: schema("bucket", "keys", "lo", "hi", "total"),
			Kind: &planpb.Node_Sink{Sink: &planpb.Sink{Kind: &planpb.Sink_File{File: &planpb.FileSink{Format: planpb.FileSource_CSV, Path: out, Changelog: true}}}}},
	}
	g, err := plan.PlanWire(&planpb.JobPlan{Name: "buckets", DefaultParallelism: int32(p), Config: cfg, Nodes: nodes}, plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// bucketHeader is the header of bucketCounts' files.
var bucketHeader = []string{"bucket", "keys", "lo", "hi", "total", "row_kind"}

// upserts applies the upsert rows of the published CSV parts of dir not in
// seen, in part order (a key's rows all come from one subtask, in its part
// counter's order), to table (the first column, the key → the row's
// values), marks them seen and counts the row kinds. Every part starts
// with header, whose last column is the row kind.
func upserts(t *testing.T, dir string, header []string, seen map[string]bool, table map[string]string, kinds map[string]int) {
	t.Helper()
	parts, err := filepath.Glob(filepath.Join(dir, "part-*"))
	if err != nil {
		t.Fatal(err)
	}
	counter := func(path string) int {
		name := strings.TrimSuffix(filepath.Base(path), ".csv")
		n, _ := strconv.Atoi(name[strings.LastIndexByte(name, '-')+1:])
		return n
	}
	slices.SortFunc(parts, func(a, b string) int { return counter(a) - counter(b) })
	for _, path := range parts {
		if seen[path] {
			continue
		}
		seen[path] = true
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		records, err := csv.NewReader(f).ReadAll()
		f.Close()
		if err != nil || len(records) == 0 || !slices.Equal(records[0], header) {
			t.Fatalf("%s: %v, records %v", path, err, records)
		}
		last := len(header) - 1
		for _, r := range records[1:] {
			kinds[r[last]]++
			switch r[last] {
			case "+I", "+U":
				table[r[0]] = strings.Join(r[:last], " ")
			case "-D":
				delete(table, r[0])
			default:
				t.Errorf("%s: row kind %s in an upsert stream", path, r[last])
			}
		}
	}
}

// wantBuckets computes bucketCounts' result for ids 0..rows-1.
func wantBuckets(rows int64) []string {
	type agg struct{ keys, lo, hi, total int64 }
	byBucket := map[int64]*agg{}
	for k := range int64(changelogKeys) {
		var total, hi int64
		for id := k; id < rows; id += changelogKeys {
			total += id
			hi = id
		}
		b := byBucket[total%changelogBuckets]
		if b == nil {
			b = &agg{lo: k, hi: hi}
			byBucket[total%changelogBuckets] = b
		}
		b.keys++
		b.total += total
		b.lo, b.hi = min(b.lo, k), max(b.hi, hi)
	}
	var out []string
	for _, bucket := range slices.Sorted(maps.Keys(byBucket)) {
		a := byBucket[bucket]
		out = append(out, fmt.Sprintf("%d %d %d %d %d", bucket, a.keys, a.lo, a.hi, a.total))
	}
	slices.Sort(out)
	return out
}

// An aggregation over the retract stream of another, stopped with a
// savepoint while rows still come and restored at another parallelism:
// the changelog both runs published (exactly-once file parts), applied,
// is the batch result: the restored groups go on from what the first run
// emitted, and the min/max multisets move with their key groups.
func TestAggregationOverAnUpdatingAggregationRestoresAtAnotherParallelism(t *testing.T) {
	const rows = 20000
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	final := func(table map[string]string) []string {
		return slices.Sorted(maps.Values(table))
	}
	t.Run("uninterrupted", func(t *testing.T) {
		out := t.TempDir()
		cfg := map[string]string{config.ConfigUpdateInterval: "30 ms"}
		if _, err := Run(context.Background(), bucketCounts(t, rows, 8000, 2, out, cfg), Options{Allocator: mem, SourceBatchRows: 200}); err != nil {
			t.Fatal(err)
		}
		table, kinds := map[string]string{}, map[string]int{}
		upserts(t, out, bucketHeader, map[string]bool{}, table, kinds)
		if got, want := final(table), wantBuckets(rows); !slices.Equal(got, want) {
			t.Errorf("applied changelog\n  %v\nwant\n  %v", got, want)
		}
		if kinds["+U"] == 0 {
			t.Errorf("row kinds %v: want updates", kinds)
		}
	})
	for _, q := range []int{1, 3} {
		t.Run(fmt.Sprintf("2 to %d", q), func(t *testing.T) {
			dir, savepoints, out := t.TempDir(), t.TempDir(), t.TempDir()
			cfg := checkpointConfig(dir, config.ConfigSavepointDir, savepoints, config.ConfigUpdateInterval, "30 ms")
			// Each source subtask holds after half its rows, so the savepoint
			// finds the job running however slow the machine.
			reg, held := heldSources(t, operators.Options{SourceBatchRows: 200, KeyedCacheGroups: 4}, rows/4)
			j, err := Start(context.Background(), bucketCounts(t, rows, 0, 2, out, cfg), Options{Allocator: mem, Registry: reg})
			if err != nil {
				t.Fatal(err)
			}
			waitHeld(t, j, held, 2)
			waitForCheckpoints(t, j, 2)
			sp, err := j.StopWithSavepoint(context.Background(), "")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := j.Wait(); err != nil {
				t.Fatal(err)
			}
			table, kinds, seen := map[string]string{}, map[string]int{}, map[string]bool{}
			upserts(t, out, bucketHeader, seen, table, kinds)
			if len(table) == 0 || slices.Equal(final(table), wantBuckets(rows)) {
				t.Fatalf("the first run published %v: want some buckets, not the result yet", final(table))
			}
			cfg[config.ConfigRestorePath] = sp
			j2, err := Start(context.Background(), bucketCounts(t, rows, 0, q, out, cfg), Options{Allocator: mem})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := j2.Wait(); err != nil {
				t.Fatal(err)
			}
			upserts(t, out, bucketHeader, seen, table, kinds)
			if got, want := final(table), wantBuckets(rows); !slices.Equal(got, want) {
				t.Errorf("applied changelog\n  %v\nwant\n  %v", got, want)
			}
		})
	}
}
