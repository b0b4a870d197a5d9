package sink

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	arrowcsv "github.com/apache/arrow-go/v18/arrow/csv"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
)

var formats = []planpb.FileSource_Format{planpb.FileSource_CSV, planpb.FileSource_JSONL, planpb.FileSource_PARQUET}

func fileSink(dir string, format planpb.FileSource_Format) *planpb.FileSink {
	return &planpb.FileSink{Format: format, Path: dir}
}

func openWriter(t *testing.T, s *planpb.FileSink, cfg Config) Writer {
	t.Helper()
	cfg.Schema = schema
	w, err := Open(&planpb.Sink{Kind: &planpb.Sink_File{File: s}}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// write writes one batch of rows ids (name "n<id>").
func write(t *testing.T, w Writer, ids ...int64) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for _, id := range ids {
		b.Field(0).(*array.Int64Builder).Append(id)
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("n%d", id))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
}

func preCommit(t *testing.T, w Writer, id int64) SinkState {
	t.Helper()
	// The state goes through a checkpoint as the writer's JSON.
	data, err := w.PreCommit(id)
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeState(data)
	if err != nil {
		t.Fatal(err)
	}
	return back
}

// restoreState is st as a checkpoint holds it.
func restoreState(t *testing.T, st SinkState) []byte {
	t.Helper()
	data, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// published is the ids in the visible part files of dir, sorted, read one
// file at a time (each must be a whole file of its format).
func published(t *testing.T, dir string, format planpb.FileSource_Format) []int64 {
	t.Helper()
	parts, err := filepath.Glob(filepath.Join(dir, "part-*"))
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, p := range parts {
		ids = append(ids, readPart(t, p, format)...)
	}
	slices.Sort(ids)
	return ids
}

func readPart(t *testing.T, path string, format planpb.FileSource_Format) []int64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var ids []int64
	add := func(a arrow.Array) {
		ids = append(ids, a.(*array.Int64).Int64Values()...)
	}
	switch format {
	case planpb.FileSource_CSV:
		header, err := bufio.NewReader(f).ReadString('\n')
		if err != nil || header != "id,name\n" {
			t.Fatalf("%s starts with %q (%v), want its header", path, header, err)
		}
		if _, err := f.Seek(0, 0); err != nil {
			t.Fatal(err)
		}
		r := arrowcsv.NewReader(f, schema, arrowcsv.WithHeader(true))
		defer r.Release()
		for r.Next() {
			add(r.RecordBatch().Column(0))
		}
		err = r.Err()
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	case planpb.FileSource_JSONL:
		r := array.NewJSONReader(f, schema)
		defer r.Release()
		for r.Next() {
			add(r.RecordBatch().Column(0))
		}
		if err := r.Err(); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	case planpb.FileSource_PARQUET:
		tbl, err := pqarrow.ReadTable(context.Background(), f, nil, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		defer tbl.Release()
		for _, c := range tbl.Column(0).Data().Chunks() {
			add(c)
		}
	}
	return ids
}

// hidden lists the in-progress and pending files of dir.
func hidden(t *testing.T, dir string) (inProgress, pending []string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		switch {
		case strings.HasSuffix(e.Name(), ".inprogress"):
			inProgress = append(inProgress, e.Name())
		case strings.HasSuffix(e.Name(), ".pending"):
			pending = append(pending, e.Name())
		case !strings.HasPrefix(e.Name(), "part-"):
			t.Errorf("unexpected file %s", e.Name())
		}
	}
	return inProgress, pending
}

func ids(from, to int64) []int64 {
	var out []int64
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}

func TestCommitPublishesExactlyTheCheckpointsRows(t *testing.T) {
	dir := t.TempDir()
	w := openWriter(t, fileSink(dir, planpb.FileSource_CSV), Config{Parallelism: 1, AttemptID: "a1"})
	write(t, w, 1, 2)
	st := preCommit(t, w, 1)
	if len(st.Pending) != 1 || st.Counter != 1 {
		t.Fatalf("state of checkpoint 1: %+v", st)
	}
	if got := filepath.Base(st.Pending[0].Final); got != "part-a1-0-0.csv" {
		t.Errorf("final name %s", got)
	}
	if got := published(t, dir, planpb.FileSource_CSV); got != nil {
		t.Fatalf("visible before Commit: %v", got)
	}
	write(t, w, 3) // after barrier 1
	if err := w.Commit(1); err != nil {
		t.Fatal(err)
	}
	if got := published(t, dir, planpb.FileSource_CSV); !slices.Equal(got, ids(1, 2)) {
		t.Fatalf("after Commit(1): %v", got)
	}
	if err := w.Commit(1); err != nil {
		t.Fatalf("second Commit(1): %v", err)
	}
	// A committable already published counts as committed.
	if err := commit(st.Pending[0]); err != nil {
		t.Fatalf("commit of a published part: %v", err)
	}
	st = preCommit(t, w, 2)
	if len(st.Pending) != 1 || st.Counter != 2 {
		t.Fatalf("state of checkpoint 2 (checkpoint 1 committed): %+v", st)
	}
	if got := published(t, dir, planpb.FileSource_CSV); !slices.Equal(got, ids(1, 2)) {
		t.Fatalf("after PreCommit(2): %v", got)
	}
	if err := w.Commit(2); err != nil {
		t.Fatal(err)
	}
	if got := published(t, dir, planpb.FileSource_CSV); !slices.Equal(got, ids(1, 3)) {
		t.Fatalf("after Commit(2): %v", got)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if ip, p := hidden(t, dir); ip != nil || p != nil {
		t.Errorf("hidden files after Close: %v %v", ip, p)
	}
}

func TestPreCommitWithoutRowsKeepsEarlierPending(t *testing.T) {
	dir := t.TempDir()
	w := openWriter(t, fileSink(dir, planpb.FileSource_JSONL), Config{Parallelism: 1, AttemptID: "a1"})
	defer w.Abort()
	write(t, w, 1)
	preCommit(t, w, 1)
	st := preCommit(t, w, 2) // no row since barrier 1; checkpoint 1 not completed
	if len(st.Pending) != 1 || st.Counter != 1 {
		t.Fatalf("state of checkpoint 2: %+v", st)
	}
	// Commit(2) subsumes checkpoint 1.
	if err := w.Commit(2); err != nil {
		t.Fatal(err)
	}
	if got := published(t, dir, planpb.FileSource_JSONL); !slices.Equal(got, []int64{1}) {
		t.Fatalf("after Commit(2): %v", got)
	}
}

// crash writes rows 1..2, checkpoint 1, rows 3..4, checkpoint 2, row 5 in
// progress, and abandons the writer as a killed process would. It returns
// the state of checkpoint 1.
func crash(t *testing.T, s *planpb.FileSink, cfg Config) SinkState {
	t.Helper()
	w := openWriter(t, s, cfg)
	write(t, w, 1, 2)
	st := preCommit(t, w, 1)
	write(t, w, 3, 4)
	preCommit(t, w, 2)
	write(t, w, 5)
	t.Cleanup(func() { _ = w.(*fileWriter).mu.cur.f.Close() }) // the process's exit
	return st
}

func TestRecoverKeepsExactlyTheRestoredCheckpoint(t *testing.T) {
	for _, format := range formats {
		t.Run(format.String(), func(t *testing.T) {
			dir := t.TempDir()
			s := fileSink(dir, format)
			st := crash(t, s, Config{Parallelism: 1, AttemptID: "a1"})
			if ip, p := hidden(t, dir); len(ip) != 1 || len(p) != 2 {
				t.Fatalf("before recovery: in progress %v, pending %v", ip, p)
			}
			for range 2 { // a failure during recovery: run it again
				if err := Recover(s, []SinkState{st}); err != nil {
					t.Fatal(err)
				}
				if got := published(t, dir, format); !slices.Equal(got, ids(1, 2)) {
					t.Fatalf("after Recover: %v", got)
				}
				if ip, p := hidden(t, dir); ip != nil || p != nil {
					t.Fatalf("left after Recover: %v %v", ip, p)
				}
			}
			// The restored attempt replays rows 3..5.
			w := openWriter(t, s, Config{Parallelism: 1, AttemptID: "a2", Restoring: true, Restore: restoreState(t, st)})
			write(t, w, 3, 4, 5)
			// The counter goes on from checkpoint 1's.
			if got := preCommit(t, w, 2); got.Counter != st.Counter+1 || len(got.Pending) != 1 ||
				filepath.Base(got.Pending[0].Final) != fmt.Sprintf("part-a2-0-1.%s", extension(format)) {
				t.Errorf("restored state %+v", got)
			}
			if err := w.Commit(2); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if got := published(t, dir, format); !slices.Equal(got, ids(1, 5)) {
				t.Fatalf("after the restored attempt: %v", got)
			}
		})
	}
}

func TestRecoverInterruptedAfterSomeCommits(t *testing.T) {
	dir := t.TempDir()
	s := fileSink(dir, planpb.FileSource_CSV)
	w := openWriter(t, s, Config{Parallelism: 1})
	write(t, w, 1)
	preCommit(t, w, 1)
	write(t, w, 2)
	st := preCommit(t, w, 2) // checkpoint 1 never notified: both parts pending
	write(t, w, 3)
	t.Cleanup(func() { _ = w.(*fileWriter).mu.cur.f.Close() })
	if len(st.Pending) != 2 {
		t.Fatalf("state %+v", st)
	}
	// A recovery that died after its first rename.
	if err := commit(st.Pending[0]); err != nil {
		t.Fatal(err)
	}
	if err := Recover(s, []SinkState{st}); err != nil {
		t.Fatal(err)
	}
	if got := published(t, dir, planpb.FileSource_CSV); !slices.Equal(got, ids(1, 2)) {
		t.Fatalf("after Recover: %v", got)
	}
	if ip, p := hidden(t, dir); ip != nil || p != nil {
		t.Fatalf("left after Recover: %v %v", ip, p)
	}

	// The published files removed: the checkpoint cannot be published.
	if err := os.Remove(st.Pending[1].Final); err != nil {
		t.Fatal(err)
	}
	if err := Recover(s, []SinkState{st}); !errors.Is(err, ErrCommittableLost) {
		t.Errorf("Recover with a lost committable: %v", err)
	}
	// A state that does not name a pending part renames nothing.
	bad := SinkState{Pending: []Committable{{Pending: st.Pending[0].Final, Final: filepath.Join(dir, "elsewhere.csv")}}}
	if err := Recover(s, []SinkState{bad}); err == nil {
		t.Error("Recover accepted a corrupt state")
	}
	if _, err := os.Stat(st.Pending[0].Final); err != nil {
		t.Errorf("a corrupt state moved a published file: %v", err)
	}
}

func TestRecoverOfAnEmptyOrMissingDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "never-written")
	if err := Recover(fileSink(dir, planpb.FileSource_CSV), nil); err != nil {
		t.Fatal(err)
	}
	if err := Recover(fileSink("", planpb.FileSource_CSV), nil); err == nil {
		t.Error("Recover of a sink without a path")
	}
}

func TestRescaledRestoreNeverCollides(t *testing.T) {
	for _, tc := range []struct {
		name     string
		old, new string // attempt ids
	}{
		{"distinct attempt ids", "a1", "a2"},
		{"random attempt ids", "", ""},
		{"a reused attempt id", "x", "x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := fileSink(dir, planpb.FileSource_PARQUET)
			// Two old subtasks: subtask k writes ids 100k+1..100k+5,
			// checkpoint 1 holds 100k+1..100k+2, and checkpoint 1 was
			// committed by subtask 0 only.
			var states []SinkState
			for k := range 2 {
				w := openWriter(t, s, Config{Subtask: k, Parallelism: 2, AttemptID: tc.old})
				base := int64(100 * k)
				write(t, w, base+1)
				preCommit(t, w, 1)
				write(t, w, base+2)
				if k == 0 {
					if err := w.Commit(1); err != nil {
						t.Fatal(err)
					}
				}
				states = append(states, preCommit(t, w, 2))
				write(t, w, base+3, base+4)
				preCommit(t, w, 3)
				write(t, w, base+5)
				t.Cleanup(func() { _ = w.(*fileWriter).mu.cur.f.Close() })
			}
			if err := Recover(s, states); err != nil {
				t.Fatal(err)
			}
			want := []int64{1, 2, 101, 102}
			if got := published(t, dir, planpb.FileSource_PARQUET); !slices.Equal(got, want) {
				t.Fatalf("after Recover: %v, want %v", got, want)
			}
			before := partFiles(t, dir)

			// Three new subtasks: new 0 starts afresh (counter 0), new 1 and
			// 2 get the states of old 0 and 1, so subtask indexes and
			// counters repeat.
			for k := range 3 {
				cfg := Config{Subtask: k, Parallelism: 3, AttemptID: tc.new}
				if k > 0 {
					cfg.Restoring, cfg.Restore = true, restoreState(t, states[k-1])
				}
				w := openWriter(t, s, cfg)
				for n := range 3 {
					id := int64(1000*(k+1) + n)
					write(t, w, id)
					want = append(want, id)
					preCommit(t, w, int64(3+n))
				}
				if err := w.Commit(5); err != nil {
					t.Fatal(err)
				}
				if err := w.Close(); err != nil {
					t.Fatal(err)
				}
			}
			slices.Sort(want)
			if got := published(t, dir, planpb.FileSource_PARQUET); !slices.Equal(got, want) {
				t.Fatalf("after the rescaled attempt: %v, want %v", got, want)
			}
			after := partFiles(t, dir)
			if len(after) != len(before)+9 {
				t.Errorf("%d parts before, %d after 9 new ones: %v", len(before), len(after), after)
			}
			for _, p := range before {
				if !slices.Contains(after, p) {
					t.Errorf("%s disappeared", p)
				}
			}
		})
	}
}

func partFiles(t *testing.T, dir string) []string {
	t.Helper()
	parts, err := filepath.Glob(filepath.Join(dir, "part-*"))
	if err != nil {
		t.Fatal(err)
	}
	return parts
}

func TestEveryPartIsAWholeFile(t *testing.T) {
	for _, format := range formats {
		t.Run(format.String(), func(t *testing.T) {
			dir := t.TempDir()
			w := openWriter(t, fileSink(dir, format), Config{Subtask: 2, Parallelism: 3, AttemptID: "a1"})
			write(t, w, 1)
			write(t, w, 2)
			preCommit(t, w, 1)
			write(t, w, 3)
			preCommit(t, w, 2)
			write(t, w, 4)
			if err := w.Commit(2); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			ext := extension(format)
			for n, want := range [][]int64{{1, 2}, {3}, {4}} {
				part := filepath.Join(dir, fmt.Sprintf("part-a1-2-%d.%s", n, ext))
				if got := readPart(t, part, format); !slices.Equal(got, want) {
					t.Errorf("%s holds %v, want %v", part, got, want)
				}
			}
			if got := len(partFiles(t, dir)); got != 3 {
				t.Errorf("%d parts, want 3", got)
			}
		})
	}
}

func TestClosePublishesEverything(t *testing.T) {
	dir := t.TempDir()
	w := openWriter(t, fileSink(dir, planpb.FileSource_CSV), Config{Parallelism: 1, AttemptID: "a1"})
	write(t, w, 1)
	preCommit(t, w, 1)
	write(t, w, 2)
	preCommit(t, w, 2)
	write(t, w, 3)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := published(t, dir, planpb.FileSource_CSV); !slices.Equal(got, ids(1, 3)) {
		t.Fatalf("after Close: %v", got)
	}
	if ip, p := hidden(t, dir); ip != nil || p != nil {
		t.Errorf("hidden files after Close: %v %v", ip, p)
	}
	if err := w.Commit(2); err != nil {
		t.Errorf("Commit after Close: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := w.Write(nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Write after Close: %v", err)
	}
}

func TestCloseWithCheckpointsAndNoRowsWritesNothing(t *testing.T) {
	dir := t.TempDir()
	w := openWriter(t, fileSink(dir, planpb.FileSource_CSV), Config{Parallelism: 1, AttemptID: "a1"})
	preCommit(t, w, 1)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("files: %v", entries)
	}
}

func TestCloseWithoutCheckpointsWritesOneFileEvenEmpty(t *testing.T) {
	dir := t.TempDir()
	w := openWriter(t, fileSink(dir, planpb.FileSource_CSV), Config{Subtask: 1, Parallelism: 2})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := readPart(t, filepath.Join(dir, "part-1.csv"), planpb.FileSource_CSV); got != nil {
		t.Errorf("rows %v", got)
	}
	if got := len(partFiles(t, dir)); got != 1 {
		t.Errorf("%d files", got)
	}
}

func TestAbortKeepsPendingAndRemovesInProgress(t *testing.T) {
	dir := t.TempDir()
	w := openWriter(t, fileSink(dir, planpb.FileSource_CSV), Config{Parallelism: 1, AttemptID: "a1"})
	write(t, w, 1)
	preCommit(t, w, 1)
	write(t, w, 2)
	w.Abort()
	w.Abort()
	ip, p := hidden(t, dir)
	if ip != nil || len(p) != 1 {
		t.Fatalf("after Abort: in progress %v, pending %v", ip, p)
	}
	if got := published(t, dir, planpb.FileSource_CSV); got != nil {
		t.Fatalf("visible after Abort: %v", got)
	}
	if _, err := w.PreCommit(2); !errors.Is(err, ErrClosed) {
		t.Errorf("PreCommit after Abort: %v", err)
	}
	// Checkpoint 1 completes after all: its part is still published.
	if err := w.Commit(1); err != nil {
		t.Fatal(err)
	}
	if got := published(t, dir, planpb.FileSource_CSV); !slices.Equal(got, []int64{1}) {
		t.Fatalf("after Commit: %v", got)
	}
}

func TestCommitRacesWrites(t *testing.T) {
	dir := t.TempDir()
	w := openWriter(t, fileSink(dir, planpb.FileSource_JSONL), Config{Parallelism: 1, AttemptID: "a1"})
	var wg sync.WaitGroup
	completed := make(chan int64, 100)
	wg.Go(func() {
		for id := range completed {
			if err := w.Commit(id); err != nil {
				t.Error(err)
			}
		}
	})
	for n := range int64(50) {
		write(t, w, n)
		preCommit(t, w, n+1)
		completed <- n + 1
	}
	close(completed)
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := published(t, dir, planpb.FileSource_JSONL); !slices.Equal(got, ids(0, 49)) {
		t.Fatalf("published %v", got)
	}
}

func TestOpenReportsEveryConfigProblem(t *testing.T) {
	_, err := Open(&planpb.Sink{Kind: &planpb.Sink_File{File: fileSink(t.TempDir(), planpb.FileSource_CSV)}},
		Config{Subtask: -1, AttemptID: "../x", Restoring: true, Restore: []byte(`{"counter":-2}`)})
	if err == nil {
		t.Fatal("Open accepted a bad config")
	}
	for _, want := range []string{"schema", "subtask -1", "counter -2", `"../x"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
}
