package allowpath

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestChecksPathsAgainstTheRoots(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "allowed")
	outside := filepath.Join(base, "secret")
	for _, d := range []string{root, outside, filepath.Join(root, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Links inside the root that lead out of it.
	if err := os.Symlink(outside, filepath.Join(root, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "new"), filepath.Join(root, "dangling")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("sub", filepath.Join(root, "inside")); err != nil {
		t.Fatal(err)
	}
	roots, err := New([]string{root})
	if err != nil {
		t.Fatal(err)
	}
	allowed := []string{
		root,
		filepath.Join(root, "sub", "chk"),
		filepath.Join(root, "not", "yet", "there"),
		filepath.Join(root, "sub", "..", "sub", "y"),
	}
	for _, p := range allowed {
		if err := roots.Check("the path", p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	refused := []string{
		outside,
		"/etc/passwd",
		filepath.Join(root, "..", "secret"),
		filepath.Join(root, "escape", "x"),
		filepath.Join(root, "dangling"),
		filepath.Join(root, "inside", "x"), // a link below a root is refused even when it stays inside

		filepath.Join(root, "escape", "..", "..", "allowed", "..", "secret"),
		filepath.Join(root, "new", "..", "..", "secret"),
		root + "-sibling",
	}
	for _, p := range refused {
		err := roots.Check("the savepoint directory", p)
		if err == nil {
			t.Errorf("%s was allowed", p)
			continue
		}
		msg := err.Error()
		for _, want := range []string{"the savepoint directory", p, root, "--allow-path"} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s: the message %q does not name %q", p, msg, want)
			}
		}
	}
}

func TestRelativePathsResolveAgainstTheWorkingDirectory(t *testing.T) {
	root := t.TempDir()
	t.Chdir(root)
	roots, err := New([]string{"."})
	if err != nil {
		t.Fatal(err)
	}
	if err := roots.Check("the path", "out/part"); err != nil {
		t.Fatal(err)
	}
	if err := roots.Check("the path", "../elsewhere"); err == nil {
		t.Fatal("../elsewhere was allowed")
	}
}

func TestRootsMustExistAndSlashAllowsAny(t *testing.T) {
	if _, err := New([]string{filepath.Join(t.TempDir(), "missing")}); err == nil {
		t.Fatal("a missing root was accepted")
	}
	any, err := New([]string{"/"})
	if err != nil {
		t.Fatal(err)
	}
	if !any.AllowsAny() || any.Check("the path", "/etc/shadow") != nil {
		t.Fatal("/ does not allow any path")
	}
	if (&Roots{}).Check("the path", "/tmp") == nil {
		t.Fatal("the zero Roots allowed a path")
	}
}

func TestObjectStorageRoots(t *testing.T) {
	r, err := New([]string{t.TempDir(), "s3://bkt/flinkgo/"})
	if err != nil {
		t.Fatal(err)
	}
	for _, ok := range []string{"s3://bkt/flinkgo", "s3://bkt/flinkgo/chk", "s3://bkt/flinkgo/a/../b/_metadata"} {
		if err := r.Check("the checkpoint dir", ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"s3://bkt/flinkgo-other", "s3://bkt/other", "s3://other/flinkgo", "s3://bkt/flinkgo/../x", "s3://"} {
		err := r.Check("the checkpoint dir", bad)
		if err == nil {
			t.Errorf("%s allowed", bad)
		} else if !strings.Contains(err.Error(), "the checkpoint dir") {
			t.Errorf("%s: error does not say what the path is for: %v", bad, err)
		}
	}
	local, err := New([]string{t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if err := local.Check("the savepoint dir", "s3://bkt/flinkgo"); err == nil || !strings.Contains(err.Error(), "--allow-path s3://") {
		t.Errorf("an s3 path without an s3 root: %v", err)
	}
	if err := Any().Check("the savepoint dir", "s3://bkt/x"); err != nil {
		t.Errorf("any path: %v", err)
	}
}

// swapForLink replaces the directory dir with a symbolic link to target, as
// a local user who can write dir's parent can at any time; the directory
// stays as dir+".old".
func swapForLink(t *testing.T, dir, target string) {
	t.Helper()
	if err := os.Rename(dir, dir+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, dir); err != nil {
		t.Fatal(err)
	}
}

// The path is checked, then a directory on it is swapped for a link out of
// the root before the server opens it (issue 29, item 5): the open, from
// the root's descriptor, refuses the link. os.Open by name, as the server
// did, read the file the link leads to.
func TestALinkSwappedInAfterTheCheckIsRefusedAtTheOpen(t *testing.T) {
	base := t.TempDir()
	root, secret := filepath.Join(base, "allowed"), filepath.Join(base, "secret")
	for _, d := range []string{filepath.Join(root, "data"), secret} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "data", "in.csv"), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(secret, "in.csv"), []byte("root's secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	roots, err := New([]string{root})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(root, "data", "in.csv")
	if err := roots.Check("the file source's file", path); err != nil {
		t.Fatal(err)
	}
	swapForLink(t, filepath.Join(root, "data"), secret)
	if data, err := os.ReadFile(path); err != nil || string(data) != "root's secret\n" {
		t.Fatalf("the swap did not take: %q %v", data, err)
	}
	f, err := roots.Open("the file source's file", path)
	if err == nil {
		f.Close()
		t.Fatal("the file was opened through the link swapped in after the check")
	}
	for _, want := range []string{"the file source's file", path, "symbolic link"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal %q does not name %q", err, want)
		}
	}
	if _, err := roots.Dir("the file sink's directory", filepath.Join(root, "data", "out"), true); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("a directory made through the swapped link: %v", err)
	}
	if entries, _ := os.ReadDir(secret); len(entries) != 1 {
		t.Errorf("the directory outside the root was written to: %v", entries)
	}
	if err := roots.Check("the file source's file", path); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("the check of the swapped path: %v", err)
	}
}

// A directory opened beneath the root stays the one worked in: a swap of
// it for a link after the open does not move what is written through Path.
func TestWorkInAnOpenedDirectoryStaysThereAfterASwap(t *testing.T) {
	base := t.TempDir()
	root, secret := filepath.Join(base, "allowed"), filepath.Join(base, "secret")
	for _, d := range []string{root, secret} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	roots, err := New([]string{root})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(root, "out")
	d, err := roots.Dir("the savepoint directory", out, true)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	swapForLink(t, out, secret)
	if err := os.MkdirAll(filepath.Join(d.Path(), "savepoint-1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d.Path(), "savepoint-1", "_metadata"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS == "linux" && !d.Pinned() {
		t.Fatal("on Linux the directory is not worked in through its descriptor")
	}
	if d.Pinned() {
		if _, err := os.Stat(filepath.Join(out+".old", "savepoint-1", "_metadata")); err != nil {
			t.Errorf("the write did not land in the directory that was opened: %v", err)
		}
		if entries, _ := os.ReadDir(secret); len(entries) != 0 {
			t.Errorf("the write followed the swapped link: %v", entries)
		}
	}
	if got := d.Logical(filepath.Join(d.Path(), "savepoint-1")); got != filepath.Join(out, "savepoint-1") {
		t.Errorf("Logical = %s", got)
	}
}

func TestPathsNamedThroughTheRootsOwnLinkAreAllowed(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "real")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	roots, err := New([]string{link})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(real, "a.csv"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(link, "a.csv"), filepath.Join(real, "a.csv")} {
		f, err := roots.Open("the file", p)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		f.Close()
	}
}
