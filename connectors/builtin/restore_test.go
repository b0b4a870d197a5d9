package builtin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/flinkgo/flinkgo/connectors/nexmark"
	"github.com/flinkgo/flinkgo/runtime/connector"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
	"github.com/flinkgo/flinkgo/runtime/source"
)

// rowStrings renders b's rows as "v1,v2,…" and releases b.
func rowStrings(b arrow.RecordBatch) []string {
	defer b.Release()
	out := make([]string, b.NumRows())
	for row := range out {
		fields := make([]string, b.NumCols())
		for c := range fields {
			fields[c] = b.Column(c).ValueStr(row)
		}
		out[row] = strings.Join(fields, ",")
	}
	return out
}

// stage is one run of a source: every subtask of parallelism p reads
// batches batches (all when negative), from the union of the previous
// stage's snapshots.
type stage struct {
	p, batches int
}

// runStages runs the stages one after another, each restored from the
// snapshots of the one before (passed through JSON), and returns the rows
// read, per stage and subtask.
func runStages(t *testing.T, mem memory.Allocator, src *planpb.Source, schema *arrow.Schema, batchRows int, stages []stage) [][][]string {
	t.Helper()
	var restore []connector.SplitState
	var out [][][]string
	for n, st := range stages {
		var union []connector.SplitState
		rows := make([][]string, st.p)
		for i := range st.p {
			r, err := openSource(src, connector.ReaderConfig{Schema: schema, Subtask: i, Parallelism: st.p, BatchRows: batchRows, Allocator: mem, Restore: restore})
			if err != nil {
				t.Fatalf("stage %d, subtask %d of %d: %v", n, i, st.p, err)
			}
			for k := 0; st.batches < 0 || k < st.batches; k++ {
				b, err := r.Next(context.Background())
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					_ = r.Close()
					t.Fatalf("stage %d, subtask %d of %d: %v", n, i, st.p, err)
				}
				if b.NumRows() > int64(batchRows) {
					t.Errorf("batch of %d rows, limit %d", b.NumRows(), batchRows)
				}
				rows[i] = append(rows[i], rowStrings(b)...)
			}
			snap, err := r.Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			_ = r.Close()
			union = append(union, snap...)
		}
		data, err := json.Marshal(union)
		if err != nil {
			t.Fatal(err)
		}
		restore = []connector.SplitState{} // restoring, even from nothing
		if err := json.Unmarshal(data, &restore); err != nil {
			t.Fatal(err)
		}
		out = append(out, rows)
	}
	return out
}

func flatten(stages [][][]string) []string {
	var all []string
	for _, s := range stages {
		all = append(all, slices.Concat(s...)...)
	}
	return all
}

// restoreFixture writes the data of every kind of source to dir.
type restoreFixture struct {
	name      string
	src       *planpb.Source
	schema    *arrow.Schema
	batchRows int
	unbounded bool
}

func restoreFixtures(t *testing.T, dir string) []restoreFixture {
	t.Helper()
	var csvPaths, jsonPaths, pqPaths []string
	for f := range 4 {
		var c, j strings.Builder
		c.WriteString("sensor,temp,site\n")
		for r := range 23 {
			id := f*100 + r
			switch r % 5 {
			case 1: // a quoted value across lines, with the delimiter
				fmt.Fprintf(&c, "%d,%d.5,\"a,\nb%d\"\n", id, r, f)
			default:
				fmt.Fprintf(&c, "%d,%d.5,site%d\n", id, r, f)
			}
			switch r % 7 {
			case 2: // an object across lines, after a blank line
				fmt.Fprintf(&j, "\n{\"sensor\": %d,\n \"temp\": %d.5, \"site\": \"s}\\\"{%d\"}\n", id, r, f)
			case 3: // two objects on a line
				fmt.Fprintf(&j, `{"sensor": %d, "temp": %d.5, "site": "x%d"} `, id, r, f)
			default:
				fmt.Fprintf(&j, `{"sensor": %d, "temp": %d.5, "site": "site%d", "extra": [1, {"a": "]"}]}`+"\n", id, r, f)
			}
		}
		cp, jp := filepath.Join(dir, fmt.Sprintf("part-%d.csv", f)), filepath.Join(dir, fmt.Sprintf("part-%d.jsonl", f))
		writeFile(t, cp, c.String())
		writeFile(t, jp, j.String())
		csvPaths, jsonPaths = append(csvPaths, cp), append(jsonPaths, jp)
		if f < 3 {
			pp := filepath.Join(dir, fmt.Sprintf("part-%d.parquet", f))
			writeParquet(t, pp, f*100, 37, 10)
			pqPaths = append(pqPaths, pp)
		}
	}
	gen := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "x", Type: arrow.PrimitiveTypes.Float64},
		{Name: "name", Type: arrow.BinaryTypes.String},
	}, nil)
	return []restoreFixture{
		{name: "csv", src: fileSource(planpb.FileSource_CSV, csvPaths...), schema: readings, batchRows: 5},
		{name: "jsonl", src: fileSource(planpb.FileSource_JSONL, jsonPaths...), schema: readings, batchRows: 5},
		{name: "parquet", src: fileSource(planpb.FileSource_PARQUET, pqPaths...), schema: readings, batchRows: 7},
		{name: "memory", src: arrowSource(t, 61, 0, 40, 3), schema: readings, batchRows: 6},
		{name: "datagen", src: &planpb.Source{Kind: &planpb.Source_Datagen{Datagen: &planpb.DatagenSource{Rows: 1000, Seed: 3}}}, schema: gen, batchRows: 37},
		{name: "nexmark-bids", src: nexmarkSource(planpb.NexmarkSource_BID, 2000, 5), schema: nexmark.Schema(planpb.NexmarkSource_BID), batchRows: 41},
		{name: "nexmark-persons", src: nexmarkSource(planpb.NexmarkSource_PERSON, 2000, 5), schema: nexmark.Schema(planpb.NexmarkSource_PERSON), batchRows: 3},
		{name: "datagen-unbounded", src: &planpb.Source{Kind: &planpb.Source_Datagen{Datagen: &planpb.DatagenSource{Seed: 3}}}, schema: gen, batchRows: 50, unbounded: true},
	}
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

// writeParquet writes rows sensor = first, first+1, … in row groups of
// groupRows rows.
func writeParquet(t *testing.T, path string, first, rows, groupRows int) {
	t.Helper()
	b := array.NewRecordBuilder(memory.DefaultAllocator, readings)
	defer b.Release()
	for i := range rows {
		b.Field(0).(*array.Int64Builder).Append(int64(first + i))
		b.Field(1).(*array.Float64Builder).Append(float64(i) / 4)
		b.Field(2).(*array.StringBuilder).Append(fmt.Sprintf("p%d", i%3))
	}
	batch := b.NewRecordBatch()
	defer batch.Release()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	props := parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(int64(groupRows)))
	w, err := pqarrow.NewFileWriter(readings, f, props, pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(batch); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// arrowSource ships a table of the given record batch sizes, rows numbered
// from 0.
func arrowSource(t *testing.T, sizes ...int) *planpb.Source {
	t.Helper()
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(readings))
	n := 0
	for _, size := range sizes {
		b := array.NewRecordBuilder(memory.DefaultAllocator, readings)
		for range size {
			b.Field(0).(*array.Int64Builder).Append(int64(n))
			b.Field(1).(*array.Float64Builder).Append(float64(n) / 2)
			b.Field(2).(*array.StringBuilder).Append("m" + strconv.Itoa(n%4))
			n++
		}
		batch := b.NewRecordBatch()
		b.Release()
		if err := w.Write(batch); err != nil {
			t.Fatal(err)
		}
		batch.Release()
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return &planpb.Source{Kind: &planpb.Source_Arrow{Arrow: &planpb.ArrowSource{Ipc: buf.Bytes()}}}
}

// TestRestoreResumesEverySourceExactly reads a prefix of every kind of
// source, restores it from the snapshots at the same, a lower and a higher
// parallelism, twice, and checks that the rows read equal one uninterrupted
// read: none lost, none read twice.
func TestRestoreResumesEverySourceExactly(t *testing.T) {
	mem := checked(t)
	for _, fx := range restoreFixtures(t, t.TempDir()) {
		t.Run(fx.name, func(t *testing.T) {
			var want []string
			if !fx.unbounded {
				want = slices.Concat(readAll(t, mem, fx.src, fx.schema, 1, fx.batchRows)...)
				slices.Sort(want)
			}
			for _, p := range []int{1, 2, 3} {
				for _, q := range []int{p, 1, p + 3} {
					for _, k := range []int{1, 3} {
						last := -1
						if fx.unbounded {
							last = k + 1
						}
						stages := []stage{{p, k}, {q, k}, {p + 1, last}}
						t.Run(fmt.Sprintf("p%d-q%d-k%d", p, q, k), func(t *testing.T) {
							got := runStages(t, mem, fx.src, fx.schema, fx.batchRows, stages)
							if fx.unbounded {
								checkLanes(t, got)
								return
							}
							all := flatten(got)
							slices.Sort(all)
							if !slices.Equal(all, want) {
								t.Errorf("read %d rows, want %d:\n got %v\nwant %v", len(all), len(want), all, want)
							}
						})
					}
				}
			}
		})
	}
}

// checkLanes checks rows of the unbounded generator read in stages: each
// subtask emits rows in increasing order, no row twice, every lane a prefix
// of its rows, and each row's values those of its row index.
func checkLanes(t *testing.T, stages [][][]string) {
	t.Helper()
	seen := make(map[int64]string)
	for s, subtasks := range stages {
		for i, rows := range subtasks {
			prev := int64(-1)
			for _, row := range rows {
				id, err := strconv.ParseInt(row[:strings.IndexByte(row, ',')], 10, 64)
				if err != nil {
					t.Fatal(err)
				}
				if id <= prev {
					t.Errorf("stage %d, subtask %d: row %d after %d", s, i, id, prev)
				}
				prev = id
				if _, dup := seen[id]; dup {
					t.Errorf("row %d read twice", id)
				}
				seen[id] = row
			}
		}
	}
	next := make([]int64, source.SplitCount) // per lane, rows seen
	maxID := int64(0)
	for id := range seen {
		next[id%source.SplitCount]++
		maxID = max(maxID, id)
	}
	for id := range seen {
		if seq := id / source.SplitCount; seq >= next[id%source.SplitCount] {
			t.Errorf("lane %d has row %d but only %d rows: a row was skipped", id%source.SplitCount, id, next[id%source.SplitCount])
		}
	}
	// Values: as a bounded run of the same seed generates them.
	ref := &planpb.Source{Kind: &planpb.Source_Datagen{Datagen: &planpb.DatagenSource{Rows: maxID + 1, Seed: 3}}}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "x", Type: arrow.PrimitiveTypes.Float64},
		{Name: "name", Type: arrow.BinaryTypes.String},
	}, nil)
	r, err := openSource(ref, connector.ReaderConfig{Schema: schema, Parallelism: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	batches, err := source.ReadAll(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	for _, b := range batches {
		all = append(all, rowStrings(b)...)
	}
	for id, row := range seen {
		if all[id] != row {
			t.Errorf("row %d is %q, want %q", id, row, all[id])
		}
	}
}

func TestRestoreReadsAFileAddedSinceFromItsStart(t *testing.T) {
	mem := checked(t)
	dir := t.TempDir()
	var paths []string
	for f := range 3 {
		var c strings.Builder
		c.WriteString("sensor,temp,site\n")
		for r := range 10 {
			fmt.Fprintf(&c, "%d,%d.5,s\n", f*100+r, r)
		}
		paths = append(paths, filepath.Join(dir, fmt.Sprintf("f%d.csv", f)))
		writeFile(t, paths[f], c.String())
	}
	want := slices.Concat(readAll(t, mem, fileSource(planpb.FileSource_CSV, paths...), readings, 1, 4)...)
	slices.Sort(want)
	// Two files at the checkpoint, f0 and f2; f1 is added before the
	// restore, which changes which subtask reads which file.
	for _, q := range []int{1, 2, 3} {
		var before, after []string
		var union []connector.SplitState
		for i := range 2 {
			r, err := openSource(fileSource(planpb.FileSource_CSV, paths[0], paths[2]), connector.ReaderConfig{Schema: readings, Subtask: i, Parallelism: 2, BatchRows: 4, Allocator: mem})
			if err != nil {
				t.Fatal(err)
			}
			b, err := r.Next(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			before = append(before, rowStrings(b)...)
			snap, _ := r.Snapshot()
			union = append(union, snap...)
			_ = r.Close()
		}
		for i := range q {
			r, err := openSource(fileSource(planpb.FileSource_CSV, paths...), connector.ReaderConfig{Schema: readings, Subtask: i, Parallelism: q, BatchRows: 4, Allocator: mem, Restore: union})
			if err != nil {
				t.Fatal(err)
			}
			batches, err := source.ReadAll(context.Background(), r)
			if err != nil {
				t.Fatal(err)
			}
			_ = r.Close()
			for _, b := range batches {
				after = append(after, rowStrings(b)...)
			}
		}
		if !slices.Contains(after, "100,0.5,s") || slices.Contains(after, "0,0.5,s") {
			t.Errorf("q=%d: f1 not read from its start, or f0 read again: %v", q, after)
		}
		all := append(before, after...)
		slices.Sort(all)
		if !slices.Equal(all, want) {
			t.Errorf("q=%d: got %v, want %v", q, all, want)
		}
	}
}

func TestRestoreSkipsDoneSplits(t *testing.T) {
	mem := checked(t)
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")
	writeFile(t, a, `{"sensor": 1}`+"\n"+`{"sensor": 2}`+"\n")
	writeFile(t, b, `{"sensor": 3}`+"\n"+`{"sensor": 4}`+"\n"+`{"sensor": 5}`+"\n")
	src := fileSource(planpb.FileSource_JSONL, a, b)
	got := runStages(t, mem, src, readings, 2, []stage{{1, 2}})
	if strings.Join(got[0][0], ";") != "1,(null),(null);2,(null),(null);3,(null),(null);4,(null),(null)" {
		t.Fatalf("before: %v", got[0][0])
	}
	r, err := openSource(src, connector.ReaderConfig{Schema: readings, Parallelism: 1, BatchRows: 2, Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		batch, err := r.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		batch.Release()
	}
	snap, err := r.Snapshot()
	_ = r.Close()
	if err != nil || len(snap) != 2 || !snap[0].Done || snap[0].Split != a || snap[1].Done || snap[1].Split != b || len(snap[1].Offset) == 0 {
		t.Fatalf("snapshot %+v, %v", snap, err)
	}
	// a is read: it is not opened again, even when it is gone.
	if err := os.Remove(a); err != nil {
		t.Fatal(err)
	}
	for _, q := range []int{1, 2} {
		var rows []string
		for i := range q {
			r, err := openSource(src, connector.ReaderConfig{Schema: readings, Subtask: i, Parallelism: q, BatchRows: 2, Allocator: mem, Restore: snap})
			if err != nil {
				t.Fatal(err)
			}
			batches, err := source.ReadAll(context.Background(), r)
			if err != nil {
				t.Fatalf("q=%d: %v", q, err)
			}
			_ = r.Close()
			for _, b := range batches {
				rows = append(rows, rowStrings(b)...)
			}
		}
		if strings.Join(rows, ";") != "5,(null),(null)" {
			t.Errorf("q=%d: after restore %v", q, rows)
		}
	}
}

func TestRestoreRejectsBadOffsets(t *testing.T) {
	fxs := restoreFixtures(t, t.TempDir())
	byName := make(map[string]restoreFixture)
	for _, fx := range fxs {
		byName[fx.name] = fx
	}
	csvPath := byName["csv"].src.GetFile().GetPaths()[0]
	jsonPath := byName["jsonl"].src.GetFile().GetPaths()[0]
	pqPath := byName["parquet"].src.GetFile().GetPaths()[0]
	for _, tc := range []struct {
		name, fixture, split, offset string
		atNext                       bool // the error comes from Next, which reads the file
	}{
		{"csv-not-json", "csv", csvPath, `row 3`, false},
		{"csv-negative", "csv", csvPath, `{"row": -1}`, false},
		{"csv-other-kind", "csv", csvPath, `{"byte": 10, "line": 2}`, false},
		{"csv-past-end", "csv", csvPath, `{"row": 1000}`, true},
		{"jsonl-unknown-field", "jsonl", jsonPath, `{"next": 3}`, false},
		{"jsonl-no-line", "jsonl", jsonPath, `{"byte": 3}`, false},
		{"jsonl-past-end", "jsonl", jsonPath, `{"byte": 100000, "line": 9}`, true},
		{"parquet-other-kind", "parquet", pqPath, `{"row": 1, "line": 1}`, false},
		{"parquet-past-groups", "parquet", pqPath, `{"row_group": 9}`, true},
		{"parquet-past-rows", "parquet", pqPath, `{"row_group": 1, "row": 11}`, true},
		{"memory-past-end", "memory", "range-0-1", `{"next": 2}`, false},
		{"datagen-trailing", "datagen", "range-0-7", `{"next": 2} {}`, false},
		{"datagen-past-end", "datagen", "range-0-7", `{"next": 8}`, false},
		{"lane-negative", "datagen-unbounded", "lane-0-of-128", `{"next": -5}`, false},
		{"lane-not-json", "datagen-unbounded", "lane-0-of-128", `{"next": "x"}`, false},
		{"lane-done", "datagen-unbounded", "lane-0-of-128", ``, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := checked(t)
			fx := byName[tc.fixture]
			restore := []connector.SplitState{{Split: tc.split, Offset: []byte(tc.offset), Done: tc.offset == ""}}
			r, err := openSource(fx.src, connector.ReaderConfig{Schema: fx.schema, Parallelism: 1, BatchRows: fx.batchRows, Allocator: mem, Restore: restore})
			if tc.atNext {
				if err != nil {
					t.Fatalf("Open: %v", err)
				}
				defer r.Close()
				_, err = r.Next(context.Background())
			} else if err == nil {
				_ = r.Close()
			}
			if !errors.Is(err, connector.ErrBadOffset) || !strings.Contains(err.Error(), strconv.Quote(tc.split)) {
				t.Fatalf("got %v, want an connector.ErrBadOffset naming %q", err, tc.split)
			}
			t.Log(err)
		})
	}
}

func TestRestoreRejectsConflictingStates(t *testing.T) {
	src := &planpb.Source{Kind: &planpb.Source_Datagen{Datagen: &planpb.DatagenSource{Rows: 10}}}
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	_, err := openSource(src, connector.ReaderConfig{Schema: schema, Parallelism: 1, Restore: []connector.SplitState{
		{Split: "range-0-1", Done: true}, {Split: "range-0-1"}, {Split: ""},
	}})
	if err == nil || !strings.Contains(err.Error(), `split "range-0-1" twice`) || !strings.Contains(err.Error(), "without a split id") {
		t.Fatalf("got %v", err)
	}
	// The same state twice is fine.
	r, err := openSource(src, connector.ReaderConfig{Schema: schema, Parallelism: 1, Restore: []connector.SplitState{
		{Split: "range-0-1", Done: true, Offset: []byte("x")}, {Split: "range-0-1", Done: true},
	}})
	if err != nil {
		t.Fatal(err)
	}
	_ = r.Close()
}

// TestRestoredDatagenKeepsToTheRate checks the batch size that keeps each
// subtask to its share of rows_per_second (a tenth of a second of rows),
// before and after restoring at another parallelism; timings are left to
// benchmarks.
func TestRestoredDatagenKeepsToTheRate(t *testing.T) {
	mem := checked(t)
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	for _, rows := range []int64{0, 100000} {
		src := &planpb.Source{Kind: &planpb.Source_Datagen{Datagen: &planpb.DatagenSource{Rows: rows, RowsPerSecond: 20000}}}
		var restore []connector.SplitState
		for _, p := range []int{4, 1, 2} {
			var union []connector.SplitState
			for i := range p {
				r, err := openSource(src, connector.ReaderConfig{Schema: schema, Subtask: i, Parallelism: p, Allocator: mem, Restore: restore})
				if err != nil {
					t.Fatal(err)
				}
				b, err := r.Next(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				if limit := int64(math.Ceil(20000 / float64(p) / 10)); b.NumRows() != limit {
					t.Errorf("rows %d, p=%d: batch of %d rows, want %d", rows, p, b.NumRows(), limit)
				}
				b.Release()
				snap, _ := r.Snapshot()
				union = append(union, snap...)
				_ = r.Close()
			}
			restore = union
		}
	}
}

func TestSnapshotAfterCloseKeepsThePosition(t *testing.T) {
	mem := checked(t)
	src := arrowSource(t, 10)
	r, err := openSource(src, connector.ReaderConfig{Schema: readings, Parallelism: 1, BatchRows: 4, Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	b, err := r.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	b.Release()
	before, _ := r.Snapshot()
	_ = r.Close()
	_ = r.Close()
	after, _ := r.Snapshot()
	if fmt.Sprint(before) != fmt.Sprint(after) || len(after) != 10 {
		t.Errorf("before close %v, after %v", before, after)
	}
}

// TestRestoreLargeFiles resumes CSV and JSON-lines files whose records cross
// the readers' buffers, and checks the JSON lines against arrow-go's own
// JSON reader.
func TestRestoreLargeFiles(t *testing.T) {
	mem := checked(t)
	dir := t.TempDir()
	var c, j strings.Builder
	c.WriteString("site,sensor,temp\n")
	for r := range 5000 {
		site := strings.Repeat(`q"{[}]\ `, r%40) + strconv.Itoa(r)
		fmt.Fprintf(&c, "%q,%d,%d.25\n", strings.ReplaceAll(site, `"`, `'`), r, r%13)
		js, _ := json.Marshal(site)
		if r%11 == 0 {
			fmt.Fprintf(&j, "{\"site\": %s,\n\t\"sensor\": %d, \"temp\": %d.25}\r\n\n", js, r, r%13)
		} else {
			fmt.Fprintf(&j, `{"temp": %d.25, "site": %s, "sensor": %d}`+"\n", r%13, js, r)
		}
	}
	cp, jp := filepath.Join(dir, "big.csv"), filepath.Join(dir, "big.jsonl")
	writeFile(t, cp, c.String())
	writeFile(t, jp, j.String())

	f, err := os.Open(jp)
	if err != nil {
		t.Fatal(err)
	}
	ref := array.NewJSONReader(f, readings, array.WithChunk(1000), array.WithAllocator(mem))
	var want []string
	for ref.Next() {
		b := ref.RecordBatch()
		b.Retain()
		want = append(want, rowStrings(b)...)
	}
	if err := ref.Err(); err != nil {
		t.Fatal(err)
	}
	ref.Release()
	_ = f.Close()
	if len(want) != 5000 {
		t.Fatalf("reference read %d rows", len(want))
	}

	for _, src := range []*planpb.Source{fileSource(planpb.FileSource_CSV, cp), fileSource(planpb.FileSource_JSONL, jp)} {
		fresh := slices.Concat(readAll(t, mem, src, readings, 1, 333)...)
		if src.GetFile().GetFormat() == planpb.FileSource_JSONL && !slices.Equal(fresh, want) {
			t.Errorf("jsonl: %d rows differ from arrow-go's JSON reader", len(fresh))
		}
		slices.Sort(fresh)
		got := flatten(runStages(t, mem, src, readings, 97, []stage{{1, 7}, {2, 13}, {1, 20}, {3, -1}}))
		slices.Sort(got)
		if !slices.Equal(got, fresh) {
			t.Errorf("%s: restored reads %d rows, want %d", src.GetFile().GetFormat(), len(got), len(fresh))
		}
	}
}

// TestRestoredFileErrorsNameTheLine checks that the line in an error after a
// restore counts from the start of the file.
func TestRestoredFileErrorsNameTheLine(t *testing.T) {
	mem := checked(t)
	dir := t.TempDir()
	jp, cp, fp := filepath.Join(dir, "bad.jsonl"), filepath.Join(dir, "bad.csv"), filepath.Join(dir, "fields.csv")
	writeFile(t, fp, "sensor,temp,site\n1,1,a\n2,2,b\n3,3,c\n4,4\n")
	writeFile(t, jp, "{\"sensor\": 1}\n\n{\"sensor\":\n 2}\n{\"sensor\": 3}\n{\"sensor\": 4}\n{\"sensor\": \"five\"}\n")
	writeFile(t, cp, "sensor,temp,site\n1,1,a\n2,2,\"b\nc\"\n3,3,c\n4,warm,d\n")
	for _, tc := range []struct {
		src  *planpb.Source
		want string
	}{
		{fileSource(planpb.FileSource_JSONL, jp), "line 7"},
		{fileSource(planpb.FileSource_CSV, cp), `line 6, column "temp"`},
		{fileSource(planpb.FileSource_CSV, fp), `line 5 has 2 fields, want 3: wrong number of fields`},
	} {
		for _, stages := range [][]stage{{{1, -1}}, {{1, 1}, {1, -1}}, {{1, 2}, {1, -1}}} {
			var restore []connector.SplitState
			var err error
			for n, st := range stages {
				var r connector.Reader
				r, err = openSource(tc.src, connector.ReaderConfig{Schema: readings, Parallelism: 1, BatchRows: 1, Allocator: mem, Restore: restore})
				if err != nil {
					t.Fatal(err)
				}
				for k := 0; err == nil && (st.batches < 0 || k < st.batches); k++ {
					var b arrow.RecordBatch
					if b, err = r.Next(context.Background()); err == nil {
						b.Release()
					}
				}
				restore, _ = r.Snapshot()
				_ = r.Close()
				if n < len(stages)-1 && err != nil {
					t.Fatalf("stage %d: %v", n, err)
				}
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "on line") {
				// "on line N" is encoding/csv's count from where the restored
				// reader started, not the file's line.
				t.Errorf("%v: got %v, want %q", stages, err, tc.want)
			}
		}
	}
}

func TestRepeatedPathsAreSplitsOfTheirOwn(t *testing.T) {
	mem := checked(t)
	path := filepath.Join(t.TempDir(), "r.csv")
	writeFile(t, path, "sensor,temp,site\n1,1,a\n2,2,b\n3,3,c\n")
	src := fileSource(planpb.FileSource_CSV, path, path)
	r, err := openSource(src, connector.ReaderConfig{Schema: readings, Parallelism: 1, BatchRows: 2, Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for range 3 {
		b, err := r.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		b.Release()
	}
	snap, _ := r.Snapshot()
	if len(snap) != 2 || snap[0].Split != path || !snap[0].Done || snap[1].Split != path+"#2" || string(snap[1].Offset) != `{"row":2}` {
		t.Fatalf("snapshot %+v", snap)
	}
	got := flatten(runStages(t, mem, src, readings, 2, []stage{{1, 3}, {2, -1}}))
	if strings.Join(got, ";") != "1,1,a;2,2,b;3,3,c;1,1,a;2,2,b;3,3,c" {
		t.Errorf("rows %v", got)
	}
}

func TestSubtasksBeyondTheSplitsReadNothing(t *testing.T) {
	mem := checked(t)
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	for _, rows := range []int64{0, 1000} {
		src := &planpb.Source{Kind: &planpb.Source_Datagen{Datagen: &planpb.DatagenSource{Rows: rows}}}
		busy := 0
		for i := range 200 {
			r, err := openSource(src, connector.ReaderConfig{Schema: schema, Subtask: i, Parallelism: 200, Allocator: mem})
			if err != nil {
				t.Fatal(err)
			}
			b, err := r.Next(context.Background())
			switch {
			case err == nil:
				busy++
				b.Release()
			case !errors.Is(err, io.EOF):
				t.Fatal(err)
			}
			_ = r.Close()
		}
		if busy != source.SplitCount {
			t.Errorf("rows %d: %d of 200 subtasks have rows, want %d", rows, busy, source.SplitCount)
		}
	}
}

// openSource opens a source through its connector, as the runtime does.
func openSource(src *planpb.Source, cfg connector.ReaderConfig) (connector.Reader, error) {
	c, err := Registry().Source(src)
	if err != nil {
		return nil, err
	}
	return c.Open(cfg)
}

func checked(t *testing.T) *memory.CheckedAllocator {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	return mem
}

func fileSource(format planpb.FileSource_Format, paths ...string) *planpb.Source {
	return &planpb.Source{Kind: &planpb.Source_File{File: &planpb.FileSource{Format: format, Paths: paths, CsvHasHeader: true}}}
}

func nexmarkSource(kind planpb.NexmarkSource_Kind, events, seed int64) *planpb.Source {
	return &planpb.Source{Kind: &planpb.Source_Nexmark{Nexmark: &planpb.NexmarkSource{Kind: kind, Events: events, Seed: seed}}}
}

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
		r, err := openSource(src, connector.ReaderConfig{Schema: schema, Subtask: i, Parallelism: p, BatchRows: batchRows, Allocator: mem})
		if err != nil {
			t.Fatal(err)
		}
		batches, err := source.ReadAll(context.Background(), r)
		_ = r.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range batches {
			if b.NumRows() > int64(batchRows) {
				t.Errorf("batch of %d rows, limit %d", b.NumRows(), batchRows)
			}
			out[i] = append(out[i], rowStrings(b)...)
			b.Release()
		}
	}
	return out
}
