package allowpath

import (
	"os"
	"path/filepath"
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
		filepath.Join(root, "inside", "x"),
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
