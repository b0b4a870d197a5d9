package job

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/runtime/config"
	"github.com/flinkgo/flinkgo/runtime/server/allowpath"
)

// allowedAndSecret makes base/allowed (the server's only root, returned
// open) and base/secret, a directory clients may not use.
func allowedAndSecret(t *testing.T) (root, secret string, roots *allowpath.Roots) {
	t.Helper()
	base := t.TempDir()
	root, secret = filepath.Join(base, "allowed"), filepath.Join(base, "secret")
	for _, d := range []string{root, secret} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	roots, err := allowpath.New([]string{root})
	if err != nil {
		t.Fatal(err)
	}
	return root, secret, roots
}

// swapForLink renames dir away (to dir.moved) and puts a symbolic link to
// target in its place: what a local user does after the server's check.
func swapForLink(t *testing.T, dir, target string) {
	t.Helper()
	if err := os.Rename(dir, dir+".moved"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, dir); err != nil {
		t.Fatal(err)
	}
}

// assertEmpty fails when anything was written into dir.
func assertEmpty(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Errorf("written through the link into %s: %v", dir, entries)
	}
}

// A checkpoint directory checked at submission and swapped for a link to
// a directory the client may not use before the job starts (issue 29,
// item 5): the job opens it from the allowed root and refuses the link;
// swapped after the job opened it, checkpoints keep going into the
// directory the job opened, never through the link, and what users see
// (checkpoint paths, a restore from a retained checkpoint) names the
// checkpoint directory as configured.
func TestCheckpointWritesDoNotFollowADirectorySwappedForALink(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	root, secret, roots := allowedAndSecret(t)
	chk, out := filepath.Join(root, "chk"), filepath.Join(root, "out")
	if err := os.MkdirAll(chk, 0o755); err != nil {
		t.Fatal(err)
	}

	t.Run("before the start", func(t *testing.T) {
		swapForLink(t, chk, secret)
		defer func() {
			_ = os.Remove(chk)
			_ = os.Rename(chk+".moved", chk)
		}()
		_, err := Start(context.Background(), keyedSums(t, 1000, 0, 1, out, checkpointConfig(chk)), Options{Allocator: mem, Paths: roots})
		if err == nil || !strings.Contains(err.Error(), "symbolic link") || !strings.Contains(err.Error(), chk) {
			t.Fatalf("a job whose checkpoint directory became a link started, or its error does not name the path and the link: %v", err)
		}
		assertEmpty(t, secret)
	})

	t.Run("while the job runs", func(t *testing.T) {
		const rows = 30000
		cfg := checkpointConfig(chk, config.ConfigCheckpointRetention, config.RetainOnCancellation)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		j, err := Start(ctx, keyedSums(t, rows, 5000, 2, out, cfg), Options{Allocator: mem, SourceBatchRows: 500, KeyedCacheGroups: 4, Paths: roots})
		if err != nil {
			t.Fatal(err)
		}
		waitForCheckpoints(t, j, 1)
		swapForLink(t, chk, secret)
		before := completedCheckpoints(j)
		waitForCheckpoints(t, j, before+2) // begun after the swap
		cancel()
		_, _ = j.Wait()
		assertEmpty(t, secret)

		jobDir := filepath.Join(chk, j.ID())
		var last string
		for _, c := range j.Checkpoints() {
			if c.Status != "completed" {
				continue
			}
			if filepath.Dir(c.Path) != jobDir {
				t.Errorf("checkpoint %d's path %s is not under the configured %s", c.ID, c.Path, jobDir)
			}
			last = c.Path
		}
		moved := filepath.Join(chk+".moved", j.ID(), filepath.Base(last))
		if _, err := os.Stat(filepath.Join(moved, "_metadata")); err != nil {
			t.Fatalf("the last checkpoint is not in the directory the job opened: %v", err)
		}
		shared, _ := os.ReadDir(filepath.Join(chk+".moved", j.ID(), "shared"))
		if len(shared) == 0 {
			t.Error("no shared files: the keyed state was not checkpointed")
		}

		// The retained checkpoint restores from the allowed root, through
		// the directory it opens, to the results of an uninterrupted run.
		if err := os.RemoveAll(out); err != nil {
			t.Fatal(err)
		}
		cfg = checkpointConfig(filepath.Join(root, "chk2"), config.ConfigRestorePath, moved)
		j2, err := Start(context.Background(), keyedSums(t, rows, 0, 2, out, cfg), Options{Allocator: mem, Paths: roots})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := j2.Wait(); err != nil {
			t.Fatal(err)
		}
		wantKeyedResults(t, rows, keyedResults(t, out))
	})
}

// A restore path checked at submission whose directory is then swapped for
// a link, or whose files are (issue 29, item 5): the job reads the
// snapshot's _metadata and state files beneath the allowed root, through
// the directory it opened, and refuses every link; unswapped, the same
// savepoint restores.
func TestARestorePathSwappedForALinkIsRefused(t *testing.T) {
	const rows = 30000
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	root, secret, roots := allowedAndSecret(t)
	out, savepoints := filepath.Join(root, "out"), filepath.Join(root, "savepoints")
	j, err := Start(context.Background(), keyedSums(t, rows, 10000, 2, out, checkpointConfig(filepath.Join(root, "chk"))),
		Options{Allocator: mem, SourceBatchRows: 500, KeyedCacheGroups: 4, Paths: roots})
	if err != nil {
		t.Fatal(err)
	}
	waitForCheckpoints(t, j, 2)
	sp, err := j.StopWithSavepoint(context.Background(), savepoints)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Wait(); err != nil {
		t.Fatal(err)
	}
	// Finished, the job removed its checkpoint directory through the
	// directory it opened.
	if _, err := os.Stat(filepath.Join(root, "chk", j.ID())); !os.IsNotExist(err) {
		t.Errorf("the finished job's checkpoint directory is still there: %v", err)
	}
	// The secret directory holds a snapshot of its own (here a copy): what
	// a link would make the job read.
	copyTree(t, sp, filepath.Join(secret, filepath.Base(sp)))
	restore := func() error {
		cfg := checkpointConfig(filepath.Join(root, "chk"), config.ConfigRestorePath, sp)
		j, err := Start(context.Background(), keyedSums(t, rows, 0, 2, out, cfg), Options{Allocator: mem, Paths: roots})
		if err != nil {
			return err
		}
		_, err = j.Wait()
		return err
	}

	t.Run("the savepoint directory", func(t *testing.T) {
		swapForLink(t, savepoints, secret)
		defer func() {
			_ = os.Remove(savepoints)
			_ = os.Rename(savepoints+".moved", savepoints)
		}()
		if err := restore(); err == nil || !strings.Contains(err.Error(), "symbolic link") || !strings.Contains(err.Error(), savepoints) {
			t.Fatalf("a restore through a swapped link: %v, want a refusal naming the path and the link", err)
		}
	})
	stateFile := func() string {
		t.Helper()
		ssts, _ := filepath.Glob(filepath.Join(sp, "*", "*.sst"))
		if len(ssts) == 0 {
			t.Fatalf("no sstable in the savepoint %s", sp)
		}
		return ssts[0]
	}()
	for name, file := range map[string]string{"its _metadata": filepath.Join(sp, "_metadata"), "a state file": stateFile} {
		t.Run(name, func(t *testing.T) {
			rel, err := filepath.Rel(sp, file)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(file, file+".moved"); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join(secret, filepath.Base(sp), rel), file); err != nil {
				t.Fatal(err)
			}
			defer func() {
				_ = os.Remove(file)
				_ = os.Rename(file+".moved", file)
			}()
			if err := restore(); err == nil || !strings.Contains(err.Error(), "symbolic link") || !strings.Contains(err.Error(), sp) {
				t.Fatalf("a restore reading %s through a link: %v, want a refusal naming the path and the link", name, err)
			}
		})
	}

	if err := os.RemoveAll(out); err != nil {
		t.Fatal(err)
	}
	if err := restore(); err != nil {
		t.Fatal(err)
	}
	wantKeyedResults(t, rows, keyedResults(t, out))
}

// copyTree copies the regular files under src to dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}
