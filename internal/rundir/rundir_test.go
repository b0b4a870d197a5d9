package rundir_test

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/flinkgo/flinkgo/internal/rundir"
)

// ownerEnv makes the test binary an owner: it creates a runtime directory
// under the base the variable names, prints its path and waits for stdin
// to close (or a signal).
const ownerEnv = "FLINKGO_TEST_RUNDIR_OWNER"

func TestMain(m *testing.M) {
	if base := os.Getenv(ownerEnv); base != "" {
		d, err := rundir.Create(base)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		// As a runtime's: files and directories of its own inside.
		_ = os.Mkdir(filepath.Join(d.Path, "plugin-dir123"), 0o700)
		_ = os.WriteFile(filepath.Join(d.Path, "plugin-dir123", "plugin.sock"), nil, 0o600)
		fmt.Println(d.Path)
		_, _ = io.Copy(io.Discard, os.Stdin)
		if err := d.Remove(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

type owner struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	dir   string
}

func startOwner(t *testing.T, base string) *owner {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), ownerEnv+"="+base)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("owner printed no directory: %v", err)
	}
	return &owner{cmd: cmd, stdin: stdin, dir: strings.TrimSpace(line)}
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

var discard = slog.New(slog.DiscardHandler)

// A SIGKILLed owner's directory is removed by the next sweep, whatever it
// holds; a live owner's never is, nor a directory whose owner may be
// creating its lock right now; an owner that ends normally removes its own.
func TestSweepRemovesOnlyDeadOwnersDirectories(t *testing.T) {
	base := t.TempDir()
	killed, live, ended := startOwner(t, base), startOwner(t, base), startOwner(t, base)
	young, err := os.MkdirTemp(base, rundir.Prefix) // no lock yet: being created
	if err != nil {
		t.Fatal(err)
	}
	unrelated := filepath.Join(base, "flinkgo-state-1")
	if err := os.Mkdir(unrelated, 0o700); err != nil {
		t.Fatal(err)
	}

	if err := killed.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = killed.cmd.Wait()
	_ = ended.stdin.Close()
	if err := ended.cmd.Wait(); err != nil {
		t.Fatalf("an owner ending normally: %v", err)
	}
	if exists(ended.dir) {
		t.Errorf("an owner that ended normally left %s", ended.dir)
	}
	if !exists(filepath.Join(killed.dir, "plugin-dir123", "plugin.sock")) {
		t.Fatal("the killed owner's directory is already gone: nothing to test")
	}

	removed := rundir.Sweep(base, discard)
	if !slices.Equal(removed, []string{killed.dir}) || exists(killed.dir) {
		t.Errorf("Sweep removed %q (killed owner's dir still there: %v); want exactly %s", removed, exists(killed.dir), killed.dir)
	}
	for _, keep := range []string{live.dir, young, unrelated} {
		if !exists(keep) {
			t.Errorf("Sweep removed %s", keep)
		}
	}
	// Once the live owner dies, its directory goes too.
	_ = live.cmd.Process.Kill()
	_ = live.cmd.Wait()
	if removed := rundir.Sweep(base, discard); !slices.Equal(removed, []string{live.dir}) {
		t.Errorf("second Sweep removed %q; want %s", removed, live.dir)
	}
}

// A directory of another process that holds its lock is never removed,
// even when that process is this one (a pid check would not know better
// after a pid reuse; the lock does).
func TestSweepKeepsALockedDirectory(t *testing.T) {
	base := t.TempDir()
	d, err := rundir.Create(base)
	if err != nil {
		t.Fatal(err)
	}
	if removed := rundir.Sweep(base, discard); len(removed) != 0 || !exists(d.Path) {
		t.Fatalf("Sweep removed a live directory: %q", removed)
	}
	if err := d.Remove(); err != nil || exists(d.Path) {
		t.Fatalf("Remove: %v, still there: %v", err, exists(d.Path))
	}
	if err := d.Remove(); err != nil {
		t.Fatalf("second Remove: %v", err)
	}
}
