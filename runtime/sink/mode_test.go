package sink

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
)

// dirWith makes a directory holding the named files.
func dirWith(t *testing.T, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("old\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func listDir(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func TestPrepareErrorRefusesNonEmptyDirectoryNamingItAndTheOptions(t *testing.T) {
	dir := dirWith(t, "part-0.csv", "part-1.csv", "part-2.csv")
	_, err := Prepare(&planpb.FileSink{Path: dir}, false)
	if err == nil {
		t.Fatal("Prepare accepted a non-empty directory in mode error")
	}
	for _, want := range []string{dir, `mode="overwrite"`, `mode="append"`, "part-0.csv"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}

func TestPrepareErrorIgnoresHiddenFilesAndRestores(t *testing.T) {
	hidden := dirWith(t, "_SUCCESS", ".part-x-0-0.csv.inprogress", ".part-x-0-1.csv.pending")
	if _, err := Prepare(&planpb.FileSink{Path: hidden}, false); err != nil {
		t.Errorf("hidden files only: %v", err)
	}
	if _, err := Prepare(&planpb.FileSink{Path: filepath.Join(t.TempDir(), "new")}, false); err != nil {
		t.Errorf("missing directory: %v", err)
	}
	full := dirWith(t, "part-0.csv")
	for _, mode := range []planpb.FileSink_Mode{planpb.FileSink_ERROR, planpb.FileSink_OVERWRITE} {
		p, err := Prepare(&planpb.FileSink{Path: full, Mode: mode}, true)
		if err != nil || p != nil {
			t.Errorf("restoring in mode %s: %v, %v; want nothing refused or recorded", mode, p, err)
		}
	}
}

func TestOverwriteDeletesExactlyWhatWasThereOnlyWhenAsked(t *testing.T) {
	dir := dirWith(t, "part-0.csv", "part-1.csv", "_SUCCESS")
	p, err := Prepare(&planpb.FileSink{Path: dir, Mode: planpb.FileSink_OVERWRITE}, false)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := p.Names(), []string{"part-0.csv", "part-1.csv"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("recorded %v, want %v", got, want)
	}
	// The new output arrives before the commit: nothing old is gone yet.
	if err := os.WriteFile(filepath.Join(dir, "part-new-0.csv"), []byte("new\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := listDir(t, dir); len(got) != 4 {
		t.Fatalf("before the commit the directory holds %v", got)
	}
	for range 2 { // idempotent
		if err := p.Delete(); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := listDir(t, dir), []string{"_SUCCESS", "part-new-0.csv"}; !reflect.DeepEqual(got, want) {
		t.Errorf("after the commit the directory holds %v, want %v", got, want)
	}
}

func TestAppendOneFileNamesNeverCollide(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	dir := dirWith(t, "part-0.csv")
	s := &planpb.FileSink{Path: dir, Format: planpb.FileSource_CSV, Mode: planpb.FileSink_APPEND}
	if p, err := Prepare(s, false); err != nil || p != nil {
		t.Fatalf("append: %v, %v", p, err)
	}
	for range 2 {
		w, err := Open(&planpb.Sink{Kind: &planpb.Sink_File{File: s}}, Config{Schema: schema, Parallelism: 1})
		if err != nil {
			t.Fatal(err)
		}
		b := batch(mem)
		if err := w.Write(b); err != nil {
			t.Fatal(err)
		}
		b.Release()
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	names := listDir(t, dir)
	if len(names) != 3 {
		t.Fatalf("two appends beside part-0.csv left %v, want three files", names)
	}
	old, err := os.ReadFile(filepath.Join(dir, "part-0.csv"))
	if err != nil || string(old) != "old\n" {
		t.Errorf("part-0.csv became %q (%v)", old, err)
	}
}
