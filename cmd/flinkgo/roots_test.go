package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The default roots of `flinkgo serve` are the working directory and this
// user's own 0700 directory in the temp dir, not the world-writable temp
// dir (issue 29, item 5), where another user can plant the links a client
// path then passes through.
func TestTheDefaultRootsAreNotTheSharedTempDir(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	t.Setenv(AllowPathEnv, "")
	t.Chdir(t.TempDir())
	roots, err := pathRoots(nil)
	if err != nil {
		t.Fatal(err)
	}
	own := filepath.Join(tmp, fmt.Sprintf("flinkgo-%d", os.Geteuid()))
	fi, err := os.Lstat(own)
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Fatalf("the user's directory in the temp dir: %v %v", fi, err)
	}
	if err := roots.Check("the path", filepath.Join(own, "out")); err != nil {
		t.Errorf("a path in the user's own directory: %v", err)
	}
	if err := roots.Check("the path", filepath.Join(tmp, "out")); err == nil {
		t.Error("a path in the shared temp dir was allowed")
	}

	// One that others may write (made by another user first) is refused.
	if err := os.Chmod(own, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := pathRoots(nil); err == nil || !strings.Contains(err.Error(), own) || !strings.Contains(err.Error(), "--allow-path") {
		t.Errorf("a directory open to others: %v", err)
	}
}
