package main

import (
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/flinkgo/flinkgo/internal/rundir"
)

// runDirs lists the runtime directories in base.
func runDirs(t *testing.T, base string) []string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(base, rundir.Prefix+"*"))
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}

// A SIGKILLed `flinkgo serve` cannot remove its temporary directory; the
// next one to start does, and removes its own when it ends (issue 9,
// item 7).
func TestNextServerRemovesTheDirectoryOfAKilledOne(t *testing.T) {
	tmp := t.TempDir()
	env := []string{"TMPDIR=" + tmp}
	first := startServe(t, env, "--listen", "unix://"+filepath.Join(tmp, "a.sock"))
	dirs := runDirs(t, tmp)
	if len(dirs) != 1 {
		t.Fatalf("want one runtime directory in $TMPDIR, got %q", dirs)
	}
	killed := dirs[0]
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = first.cmd.Wait()
	if _, err := os.Stat(filepath.Join(killed, rundir.LockName)); err != nil {
		t.Fatalf("the killed server's directory should still be there: %v", err)
	}

	second := startServe(t, env, "--listen", "unix://"+filepath.Join(tmp, "b.sock"))
	dirs = runDirs(t, tmp)
	if len(dirs) != 1 || slices.Contains(dirs, killed) {
		t.Fatalf("after the second server started: runtime directories %q; want only its own, not %s", dirs, killed)
	}
	if err := second.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := second.cmd.Wait(); err != nil {
		t.Fatalf("second server: %v\n%s", err, second.stderr)
	}
	if dirs := runDirs(t, tmp); len(dirs) != 0 {
		t.Errorf("a server that ended normally left %q", dirs)
	}
}
