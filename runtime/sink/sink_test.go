package sink

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"go.uber.org/goleak"

	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
	"github.com/flinkgo/flinkgo/runtime/rowkind"
	"github.com/flinkgo/flinkgo/runtime/source"
)

// TestMain checks for leaks.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var schema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

func batch(mem memory.Allocator) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2, 0}, []bool{true, true, false})
	b.Field(1).(*array.StringBuilder).AppendValues([]string{"a", `quo"te`, "c"}, nil)
	return b.NewRecordBatch()
}

func TestFileSinksRoundTrip(t *testing.T) {
	for _, format := range []planpb.FileSource_Format{planpb.FileSource_CSV, planpb.FileSource_JSONL, planpb.FileSource_PARQUET} {
		t.Run(format.String(), func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			dir := t.TempDir()
			w, err := Open(&planpb.Sink{Kind: &planpb.Sink_File{File: &planpb.FileSink{Format: format, Path: dir}}}, Config{Schema: schema, Subtask: 3, Parallelism: 4})
			if err != nil {
				t.Fatal(err)
			}
			b := batch(mem)
			err = w.Write(b)
			b.Release()
			if err != nil {
				t.Fatal(err)
			}
			// Nothing is published before Close.
			if entries, _ := os.ReadDir(dir); len(entries) != 1 || !strings.HasSuffix(entries[0].Name(), ".inprogress") {
				t.Fatalf("before Close: %v", entries)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			part := filepath.Join(dir, "part-3."+map[planpb.FileSource_Format]string{planpb.FileSource_CSV: "csv", planpb.FileSource_JSONL: "jsonl", planpb.FileSource_PARQUET: "parquet"}[format])
			src := &planpb.FileSource{Format: format, Paths: []string{part}, CsvHasHeader: true}
			r, err := source.OpenFiles(src, source.Config{Schema: schema, Parallelism: 1, Allocator: mem})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			back, err := source.ReadAll(context.Background(), r)
			if err != nil {
				t.Fatal(err)
			}
			var rows []string
			for _, b := range back {
				for i := range int(b.NumRows()) {
					rows = append(rows, b.Column(0).ValueStr(i)+"|"+b.Column(1).ValueStr(i))
				}
				b.Release()
			}
			if got := strings.Join(rows, ";"); got != `1|a;2|quo"te;(null)|c` {
				t.Errorf("read back %s", got)
			}
		})
	}
}

func TestAbortRemovesInProgressFile(t *testing.T) {
	dir := t.TempDir()
	w, err := Open(&planpb.Sink{Kind: &planpb.Sink_File{File: &planpb.FileSink{Format: planpb.FileSource_CSV, Path: dir}}}, Config{Schema: schema, Parallelism: 1})
	if err != nil {
		t.Fatal(err)
	}
	w.Abort()
	w.Abort()
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("left behind: %v", entries)
	}
}

// A file sink refuses a changelog unless it writes changelogs; then the
// kinds are an explicit row_kind column after the data columns.
func TestFileSinkWritesRowKindsOnlyWhenAsked(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	values := batch(mem)
	defer values.Release()
	b, err := rowkind.AttachConstant(mem, values, rowkind.UpdateAfter)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release()
	dir := t.TempDir()
	file := &planpb.FileSink{Format: planpb.FileSource_CSV, Path: dir}
	if _, err := Open(&planpb.Sink{Kind: &planpb.Sink_File{File: file}}, Config{Schema: b.Schema(), Parallelism: 1}); err == nil ||
		!strings.Contains(err.Error(), "write them with changelog set") {
		t.Fatalf("a changelog into a plain file sink: %v", err)
	}
	file.Changelog = true
	w, err := Open(&planpb.Sink{Kind: &planpb.Sink_File{File: file}}, Config{Schema: b.Schema(), Parallelism: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "part-0.csv"))
	if err != nil {
		t.Fatal(err)
	}
	want := "id,name,row_kind\n1,a,+U\n2,\"quo\"\"te\",+U\n,c,+U\n"
	if string(data) != want {
		t.Errorf("wrote %q, want %q", data, want)
	}
}
