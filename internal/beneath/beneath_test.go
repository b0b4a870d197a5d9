package beneath

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

// Both ways of opening beneath a root (openat2, and the O_NOFOLLOW walk of
// kernels without it) follow the same rule.
func TestOpenBeneathRefusesLinksAndEscapes(t *testing.T) {
	modes := []bool{false}
	if runtime.GOOS == "linux" {
		modes = append(modes, true)
	}
	for _, withOpenat2 := range modes {
		t.Run(map[bool]string{true: "openat2", false: "walk"}[withOpenat2], func(t *testing.T) {
			if runtime.GOOS == "linux" {
				was := noOpenat2.Load()
				noOpenat2.Store(!withOpenat2)
				t.Cleanup(func() { noOpenat2.Store(was) })
			}
			base := t.TempDir()
			dir := filepath.Join(base, "root")
			for _, d := range []string{filepath.Join(dir, "a", "b"), filepath.Join(base, "out")} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			for _, f := range []string{filepath.Join(dir, "a", "b", "f"), filepath.Join(base, "out", "f")} {
				if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Symlink(filepath.Join(base, "out"), filepath.Join(dir, "a", "link")); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("b", filepath.Join(dir, "a", "inside")); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("f", filepath.Join(dir, "a", "b", "flink")); err != nil {
				t.Fatal(err)
			}
			root, err := OpenRoot(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer root.Close()
			f, err := root.OpenFile("a/b/f", os.O_RDONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.Close()
			for _, rel := range []string{"a/link/f", "a/inside/f", "a/b/flink"} {
				f, err := root.OpenFile(rel, os.O_RDONLY, 0)
				if err == nil {
					f.Close()
					t.Errorf("%s was opened through a link", rel)
				} else if !errors.Is(err, syscall.ELOOP) || !strings.Contains(err.Error(), "symbolic link") {
					t.Errorf("%s: %v", rel, err)
				}
			}
			for _, rel := range []string{"../out/f", "a/../../out/f", "/etc/passwd"} {
				if f, err := root.OpenFile(rel, os.O_RDONLY, 0); err == nil {
					f.Close()
					t.Errorf("%s left the root", rel)
				}
			}
			if _, err := root.Dir("a/link/new", true); err == nil {
				t.Error("a directory was made through a link")
			}
			if _, err := os.Stat(filepath.Join(base, "out", "new")); err == nil {
				t.Error("a directory was made outside the root")
			}
			d, err := root.Dir("x/y", true)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			if d.Name() != filepath.Join(dir, "x", "y") {
				t.Errorf("Name = %s", d.Name())
			}
			if fi, err := os.Stat(d.Path()); err != nil || !fi.IsDir() {
				t.Errorf("Path %s: %v", d.Path(), err)
			}
		})
	}
}

// A directory opened beneath a root opens its subdirectories from its own
// descriptor (a link there is refused), and its errors name it as the
// client did while keeping their cause.
func TestSubRefusesLinksAndErrorsShowTheName(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "root")
	if err := os.MkdirAll(filepath.Join(dir, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(base, filepath.Join(dir, "d", "link")); err != nil {
		t.Fatal(err)
	}
	root, err := OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	d, err := root.Dir("d", false)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := d.Sub("link", false); err == nil || !errors.Is(err, syscall.ELOOP) {
		t.Errorf("Sub through a link: %v", err)
	}
	sub, err := d.Sub("new", true)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if sub.Name() != filepath.Join(dir, "d", "new") {
		t.Errorf("Name = %s", sub.Name())
	}
	if _, err := OpenIn(d.Path(), "link/x"); err == nil || !errors.Is(err, syscall.ELOOP) {
		t.Errorf("OpenIn through a link: %v", err)
	}
	_, err = os.Open(filepath.Join(d.Path(), "missing"))
	shown := d.ShowNames(err)
	if runtime.GOOS == "linux" && strings.Contains(shown.Error(), "/proc/self/fd") || !strings.Contains(shown.Error(), filepath.Join(dir, "d", "missing")) {
		t.Errorf("ShowNames: %v", shown)
	}
	if !errors.Is(shown, os.ErrNotExist) {
		t.Errorf("ShowNames lost the cause: %v", shown)
	}
}
