package sink

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
	"github.com/flinkgo/flinkgo/runtime/server/allowpath"
)

// A file sink's directory checked, then swapped for a link elsewhere
// (issue 29, item 5: a local user made the server write a part file
// outside the allowed roots). Swapped before the sink opens it, the open
// refuses the link; swapped after, the parts still go to the directory
// that was opened, not through the link.
func TestAFileSinkDoesNotWriteThroughALinkSwappedInAfterTheCheck(t *testing.T) {
	base := t.TempDir()
	root, secret := filepath.Join(base, "allowed"), filepath.Join(base, "secret")
	if err := os.MkdirAll(secret, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	roots, err := allowpath.New([]string{root})
	if err != nil {
		t.Fatal(err)
	}
	swap := func(dir string) {
		t.Helper()
		if err := os.Rename(dir, dir+".old"); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(secret, dir); err != nil {
			t.Fatal(err)
		}
	}
	open := func(dir string) (Writer, error) {
		return Open(&planpb.Sink{Kind: &planpb.Sink_File{File: &planpb.FileSink{Format: planpb.FileSource_CSV, Path: dir}}},
			Config{Schema: schema, Parallelism: 1, Paths: roots})
	}

	before := filepath.Join(root, "before")
	if err := os.Mkdir(before, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := roots.Check("the file sink", before); err != nil {
		t.Fatal(err)
	}
	swap(before)
	if w, err := open(before); err == nil {
		w.Abort()
		t.Fatal("the sink opened its directory through the swapped link")
	} else if !strings.Contains(err.Error(), before) || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("the refusal %q does not name the path and the link", err)
	}

	after := filepath.Join(root, "after")
	w, err := open(after)
	if err != nil {
		t.Fatal(err)
	}
	swap(after)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	b := batch(mem)
	err = w.Write(b)
	b.Release()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.PreCommit(1); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(secret); len(entries) != 0 {
		t.Fatalf("the sink wrote through the link: %v", entries)
	}
	entries, _ := os.ReadDir(after + ".old")
	if len(entries) != 1 || !strings.HasPrefix(entries[0].Name(), "part-") {
		t.Fatalf("the part is not in the directory the sink opened: %v", entries)
	}
}

// Mode "overwrite" deletes the previous output at the job's end, and
// recovery removes a failed attempt's hidden parts: with the directory
// swapped for a link since the check, neither deletes anything through it.
func TestOverwriteAndRecoveryDoNotDeleteThroughASwappedLink(t *testing.T) {
	base := t.TempDir()
	root, secret := filepath.Join(base, "allowed"), filepath.Join(base, "secret")
	out := filepath.Join(root, "out")
	for _, d := range []string{out, secret} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{filepath.Join(out, "old.csv"), filepath.Join(secret, "old.csv"), filepath.Join(secret, ".part-x-0-0.csv.inprogress")} {
		if err := os.WriteFile(f, []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	roots, err := allowpath.New([]string{root})
	if err != nil {
		t.Fatal(err)
	}
	s := &planpb.FileSink{Format: planpb.FileSource_CSV, Path: out, Mode: planpb.FileSink_OVERWRITE}
	prev, err := PrepareBeneath(roots, s, false)
	if err != nil || len(prev.Names()) != 1 {
		t.Fatalf("prepare: %v %v", prev.Names(), err)
	}
	if err := os.Rename(out, out+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, out); err != nil {
		t.Fatal(err)
	}
	if err := prev.Delete(); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("the overwrite's delete through the link: %v", err)
	}
	if err := RecoverBeneath(roots, s, nil); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("the recovery through the link: %v", err)
	}
	if entries, _ := os.ReadDir(secret); len(entries) != 2 {
		t.Errorf("files behind the link were deleted: %v", entries)
	}
}
