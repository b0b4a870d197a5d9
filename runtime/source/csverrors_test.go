package source

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
)

// csvTyped has a column of each type whose values the locator checks.
var csvTyped = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "at", Type: &arrow.TimestampType{Unit: arrow.Millisecond}, Nullable: true},
	{Name: "day", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	{Name: "small", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
	{Name: "ok", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
}, nil)

// A value that does not parse, or a line that is not a record of the
// schema, is named by its file line (the header is line 1) and column,
// in the first batch and deep in the file, with and without a header.
func TestCSVErrorsNameTheFileLineAndColumn(t *testing.T) {
	good := func(i int) string { return fmt.Sprintf("%d,2024-01-02 03:04:05,2024-01-02,7,true", i) }
	for _, tc := range []struct {
		name string
		bad  string
		want string // after "line N"
	}{
		{"timestamp", "1,yesterday,2024-01-02,7,true", `, column "at": cannot parse "yesterday" as timestamp[ms]`},
		{"date", "1,2024-01-02 03:04:05,2024-13-45,7,true", `, column "day": cannot parse "2024-13-45" as date32`},
		{"int8 overflow", "1,2024-01-02 03:04:05,2024-01-02,300,true", `, column "small": cannot parse "300" as int8`},
		{"int", "x1,2024-01-02 03:04:05,2024-01-02,7,true", `, column "id": cannot parse "x1" as int64`},
		{"bool", "1,2024-01-02 03:04:05,2024-01-02,7,maybe", `, column "ok": cannot parse "maybe" as bool`},
		{"fields", "1,2024-01-02 03:04:05,2024-01-02,7", ` has 4 fields, want 5`},
		{"quote", `1,2024-01-02 03:04:05,"2024-01-02"x,7,true`, ``},
	} {
		for _, header := range []bool{true, false} {
			for _, before := range []int{1, 25_000} { // in the first batch; past two batches
				t.Run(fmt.Sprintf("%s/header=%v/before=%d", tc.name, header, before), func(t *testing.T) {
					var sb strings.Builder
					line := 1
					if header {
						sb.WriteString("id,at,day,small,ok\n")
						line++
					}
					for i := range before {
						sb.WriteString(good(i) + "\n")
						line++
					}
					sb.WriteString(tc.bad + "\n" + good(-1) + "\n")
					path := filepath.Join(t.TempDir(), "bad.csv")
					writeFile(t, path, sb.String())
					src := &planpb.Source{Kind: &planpb.Source_File{File: &planpb.FileSource{Format: planpb.FileSource_CSV, Paths: []string{path}, CsvHasHeader: header}}}
					r, err := Open(src, Config{Schema: csvTyped, Parallelism: 1, Allocator: checked(t)})
					if err != nil {
						t.Fatal(err)
					}
					defer r.Close()
					_, err = ReadAll(context.Background(), r)
					want := fmt.Sprintf("line %d%s", line, tc.want)
					if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), path) {
						t.Errorf("got %v\nwant it to name %s and %q", err, path, want)
					}
				})
			}
		}
	}
}

// A value of a type the locator does not check is still placed: in the
// data rows of the batch that holds it.
func TestCSVErrorOfAnUncheckedTypeNamesItsRows(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "at", Type: arrow.FixedWidthTypes.Time32s, Nullable: true}}, nil)
	path := filepath.Join(t.TempDir(), "times.csv")
	writeFile(t, path, "at\n12:00:00\n13:00:00\n14:00:00\nnoon\n")
	src := &planpb.Source{Kind: &planpb.Source_File{File: &planpb.FileSource{Format: planpb.FileSource_CSV, Paths: []string{path}, CsvHasHeader: true}}}
	r, err := Open(src, Config{Schema: schema, Parallelism: 1, BatchRows: 2, Allocator: checked(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	_, err = ReadAll(context.Background(), r)
	if want := "in data rows 3 to 4 (the header not counted)"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("got %v, want %q", err, want)
	}
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}
