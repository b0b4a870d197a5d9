package state

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestStorageLayout(t *testing.T) {
	st := Storage{Root: "/ckpt/job-1"}
	if st.SharedDir() != "/ckpt/job-1/shared" ||
		st.TaskOwnedDir() != "/ckpt/job-1/taskowned" || st.CheckpointDir(12) != "/ckpt/job-1/chk-12" {
		t.Fatalf("layout: %s %s %s", st.SharedDir(), st.TaskOwnedDir(), st.CheckpointDir(12))
	}
	st = Storage{Root: filepath.Join(t.TempDir(), "a", "b", "job")}
	if err := st.Init(); err != nil {
		t.Fatal(err)
	}
	if err := st.Init(); err != nil {
		t.Fatalf("second Init: %v", err)
	}
	for _, d := range []string{st.SharedDir(), st.TaskOwnedDir()} {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			t.Fatalf("Init did not create %s: %v", d, err)
		}
	}
}

func TestStorageInitParentIsFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "not-a-dir")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	st := Storage{Root: filepath.Join(file, "checkpoints", "job-1")}
	err := st.Init()
	if !errors.Is(err, ErrStorage) {
		t.Fatalf("Init under a regular file: %v", err)
	}
	for _, want := range []string{st.Root, file + " is a regular file, not a directory"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

func TestStorageInitReadOnly(t *testing.T) {
	parent := filepath.Join(t.TempDir(), "read-only")
	if err := os.Mkdir(parent, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(parent, 0o755) })
	st := Storage{Root: filepath.Join(parent, "job-1")}
	var err error
	// Root ignores directory permissions; drop that privilege for the call.
	withoutDACOverride(t, func() { err = st.Init() })
	if !errors.Is(err, ErrStorage) {
		t.Fatalf("Init in a read-only directory: %v", err)
	}
	for _, want := range []string{st.Root, "permission denied", parent + " (mode -r-xr-xr-x)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}

	// An existing but read-only shared/ is reported too.
	st = Storage{Root: filepath.Join(t.TempDir(), "job-2")}
	if err := st.Init(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(st.SharedDir(), 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(st.SharedDir(), 0o755) })
	withoutDACOverride(t, func() { err = st.Init() })
	if !errors.Is(err, ErrStorage) || !strings.Contains(err.Error(), st.SharedDir()+" is not writable") {
		t.Fatalf("Init with a read-only shared/: %v", err)
	}
}
