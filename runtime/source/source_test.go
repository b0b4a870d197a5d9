package source

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"go.uber.org/goleak"

	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var readings = arrow.NewSchema([]arrow.Field{
	{Name: "sensor", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "temp", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "site", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

// readAll reads every subtask of src and returns column values per subtask.
func readAll(t *testing.T, mem memory.Allocator, src *planpb.Source, schema *arrow.Schema, p, batchRows int) [][]string {
	t.Helper()
	out := make([][]string, p)
	for i := range p {
		for _, b := range readSubtask(t, src, Config{Schema: schema, Subtask: i, Parallelism: p, BatchRows: batchRows, Allocator: mem}) {
			if b.NumRows() > int64(batchRows) {
				t.Errorf("batch of %d rows, limit %d", b.NumRows(), batchRows)
			}
			for row := range int(b.NumRows()) {
				var fields []string
				for c := range int(b.NumCols()) {
					fields = append(fields, b.Column(c).ValueStr(row))
				}
				out[i] = append(out[i], strings.Join(fields, ","))
			}
			b.Release()
		}
	}
	return out
}

// readSubtask reads the share of src cfg says; the caller releases the
// batches.
func readSubtask(t testing.TB, src *planpb.Source, cfg Config) []arrow.RecordBatch {
	t.Helper()
	r, err := Open(src, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Close() }()
	batches, err := ReadAll(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	return batches
}

func checked(t *testing.T) *memory.CheckedAllocator {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	return mem
}

func TestArrowSourceSplitsRowRanges(t *testing.T) {
	mem := checked(t)
	b := array.NewRecordBuilder(mem, readings)
	for i := range 10 {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.Float64Builder).Append(float64(i) / 2)
		b.Field(2).(*array.StringBuilder).Append("s")
	}
	batch := b.NewRecordBatch()
	b.Release()
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(readings))
	if err := w.Write(batch); err != nil {
		t.Fatal(err)
	}
	_ = w.Close()
	batch.Release()
	src := &planpb.Source{Kind: &planpb.Source_Arrow{Arrow: &planpb.ArrowSource{Ipc: buf.Bytes()}}}
	got := readAll(t, mem, src, readings, 2, 3)
	// 10 rows in 128 ranges: ten ranges of one row; ranges 0-63 (rows 0-4)
	// to subtask 0, ranges 64-127 (rows 5-9) to subtask 1, in batches of at
	// most 3 rows.
	if strings.Join(got[0], ";") != "0,0,s;1,0.5,s;2,1,s;3,1.5,s;4,2,s" || len(got[1]) != 5 || got[1][0] != "5,2.5,s" {
		t.Errorf("split: %v", got)
	}
}

func fileSource(format planpb.FileSource_Format, paths ...string) *planpb.Source {
	return &planpb.Source{Kind: &planpb.Source_File{File: &planpb.FileSource{Format: format, Paths: paths, CsvHasHeader: true}}}
}

func TestCSVAndJSONLFilesAreSplitByFile(t *testing.T) {
	mem := checked(t)
	dir := t.TempDir()
	var csvPaths, jsonPaths []string
	for f := range 3 {
		var c, j strings.Builder
		c.WriteString("sensor,temp,site\n")
		for r := range 4 {
			fmt.Fprintf(&c, "%d,%d.5,site%d\n", f*10+r, r, f)
			fmt.Fprintf(&j, `{"sensor": %d, "temp": %d.5, "site": "site%d"}`+"\n", f*10+r, r, f)
		}
		cp := filepath.Join(dir, fmt.Sprintf("part-%d.csv", f))
		jp := filepath.Join(dir, fmt.Sprintf("part-%d.jsonl", f))
		if err := os.WriteFile(cp, []byte(c.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(jp, []byte(j.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		csvPaths, jsonPaths = append(csvPaths, cp), append(jsonPaths, jp)
	}
	for name, src := range map[string]*planpb.Source{
		"csv":   fileSource(planpb.FileSource_CSV, csvPaths...),
		"jsonl": fileSource(planpb.FileSource_JSONL, jsonPaths...),
	} {
		t.Run(name, func(t *testing.T) {
			got := readAll(t, mem, src, readings, 2, 3)
			// Files 0 and 2 to subtask 0, file 1 to subtask 1, rows in order.
			if len(got[0]) != 8 || len(got[1]) != 4 || got[0][0] != "0,0.5,site0" || got[0][4] != "20,0.5,site2" || got[1][3] != "13,3.5,site1" {
				t.Errorf("rows: %v", got)
			}
		})
	}
}

func TestMalformedCSVNamesFileLineAndColumn(t *testing.T) {
	mem := checked(t)
	path := filepath.Join(t.TempDir(), "bad.csv")
	data := "sensor,temp,site\n1,2.5,a\n2,warm,b\n"
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := Open(fileSource(planpb.FileSource_CSV, path), Config{Schema: readings, Parallelism: 1, Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	_, err = ReadAll(context.Background(), r)
	for _, want := range []string{path, "line 3", `column "temp"`, `cannot parse "warm" as float64`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
}

// A value that does not parse fails the read before the batch holding it
// is passed on: arrow-go's reader would hand it over with a null there.
func TestMalformedCSVValueNeverReachesABatch(t *testing.T) {
	mem := checked(t)
	path := filepath.Join(t.TempDir(), "bad.csv")
	data := "sensor,temp,site\n1,2.5,a\n2,warm,b\n3,4.0,c\n"
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := Open(fileSource(planpb.FileSource_CSV, path), Config{Schema: readings, Parallelism: 1, BatchRows: 10, Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for {
		b, err := r.Next(context.Background())
		if err != nil {
			if errors.Is(err, io.EOF) || !strings.Contains(err.Error(), `cannot parse "warm" as float64`) {
				t.Fatalf("want the parse error, got %v", err)
			}
			return
		}
		for row := range int(b.NumRows()) {
			if b.Column(1).IsNull(row) {
				t.Errorf("row %d passed on with a null temp in place of the value that did not parse", row)
			}
		}
		b.Release()
	}
}

func TestMissingFileIsNamed(t *testing.T) {
	r, err := Open(fileSource(planpb.FileSource_JSONL, "/nonexistent/x.jsonl"), Config{Schema: readings, Parallelism: 1})
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Next(context.Background())
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/x.jsonl") || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("got %v", err)
	}
}

func TestParquetFile(t *testing.T) {
	mem := checked(t)
	path := filepath.Join(t.TempDir(), "r.parquet")
	b := array.NewRecordBuilder(memory.DefaultAllocator, readings)
	for i := range 25 {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.Float64Builder).Append(float64(i))
		b.Field(2).(*array.StringBuilder).Append("p")
	}
	batch := b.NewRecordBatch()
	b.Release()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := pqarrow.NewFileWriter(readings, f, nil, pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(batch); err != nil {
		t.Fatal(err)
	}
	batch.Release()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got := readAll(t, mem, fileSource(planpb.FileSource_PARQUET, path), readings, 1, 10)
	if len(got[0]) != 25 || got[0][24] != "24,24,p" {
		t.Errorf("rows: %v", got[0])
	}
}

func TestCSVHeaderColumnsMatchByName(t *testing.T) {
	mem := checked(t)
	path := filepath.Join(t.TempDir(), "wide.csv")
	if err := os.WriteFile(path, []byte("site,unused,temp,sensor\na,x,1.5,1\nb,y,2.5,2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got := readAll(t, mem, fileSource(planpb.FileSource_CSV, path), readings, 1, 10)
	if strings.Join(got[0], ";") != "1,1.5,a;2,2.5,b" {
		t.Errorf("rows %v", got[0])
	}
}
