package state

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/flinkgo/flinkgo/internal/objstore"
)

// Storage is the checkpoint storage of one job
// (docs/semantics.md#checkpoints), laid out as:
//
//	<Root>/shared/       sstables shared by incremental checkpoints
//	<Root>/taskowned/    state owned by the tasks (unused by this package)
//	<Root>/chk-<n>/      checkpoint n: the caller's _metadata, and one
//	                     <uid>-<subtask>/ directory of private files per
//	                     backend snapshot
//
// where Root is <checkpoint dir>/<job id>, a local directory or an
// s3://bucket/prefix URL (object storage, remote.go). Persist writes into
// it; a SharedRegistry deletes from shared/ what no checkpoint references.
type Storage struct {
	// Root is the job's checkpoint directory, <dir>/<job-id>.
	Root string
	// CopyFiles makes Persist copy files into the storage even when a hard
	// link would do (same filesystem as Options.Dir), so that the storage
	// shares no inode with the working directory. Default: hard-link when
	// possible.
	CopyFiles bool
}

// SharedDir returns <Root>/shared.
func (s Storage) SharedDir() string { return join(s.Root, "shared") }

// TaskOwnedDir returns <Root>/taskowned.
func (s Storage) TaskOwnedDir() string { return join(s.Root, "taskowned") }

// CheckpointDir returns <Root>/chk-<n>.
func (s Storage) CheckpointDir(n int64) string {
	return join(s.Root, "chk-"+strconv.FormatInt(n, 10))
}

// Remote reports whether the storage is on object storage (Root is an
// s3:// URL, remote.go): files are uploaded there rather than linked or
// copied, and CopyFiles does not apply.
func (s Storage) Remote() bool { return objstore.IsURL(s.Root) }

// RemoveCheckpoint removes <Root>/chk-<n> and everything in it (the
// caller's _metadata and the private files of every backend snapshot). The
// shared files the checkpoint references are the SharedRegistry's: release
// the checkpoint there. Removing a checkpoint that does not exist is not an
// error.
func (s Storage) RemoveCheckpoint(n int64) error {
	if s.Remote() {
		if err := removeRemote(context.Background(), s.CheckpointDir(n)); err != nil {
			return fmt.Errorf("%w: remove checkpoint %d: %w", ErrStorage, n, err)
		}
		return nil
	}
	if err := os.RemoveAll(s.CheckpointDir(n)); err != nil {
		return fmt.Errorf("%w: remove checkpoint %d: %w", ErrStorage, n, err)
	}
	return nil
}

// Init creates Root, shared/ and taskowned/ (and Root's missing parents),
// and checks that shared/ is writable. Its error wraps ErrStorage and says
// which directory could not be created or written, and why, in terms a user
// can act on: a parent that is a regular file, a missing permission. Init
// may be called again; the caller decides whether it runs at job start or
// at the first checkpoint.
func (s Storage) Init() error {
	if s.Root == "" {
		return fmt.Errorf("%w: checkpoint storage root is empty", ErrStorage)
	}
	if s.Remote() {
		return s.initRemote()
	}
	for _, dir := range []string{s.Root, s.SharedDir(), s.TaskOwnedDir()} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("%w: cannot create checkpoint directory %s: %s", ErrStorage, dir, explainMkdir(dir, err))
		}
	}
	probe, err := os.CreateTemp(s.SharedDir(), ".probe-*")
	if err != nil {
		return fmt.Errorf("%w: checkpoint directory %s is not writable: %s", ErrStorage, s.SharedDir(), explainMkdir(s.SharedDir(), err))
	}
	name := probe.Name()
	_ = probe.Close()
	if err := os.Remove(name); err != nil {
		return fmt.Errorf("%w: checkpoint directory %s: cannot remove files: %w", ErrStorage, s.SharedDir(), err)
	}
	return nil
}

// explainMkdir turns a failure to create (or write into) dir into a
// sentence naming the path at fault.
func explainMkdir(dir string, err error) string {
	// Find the closest existing ancestor: that is where creation failed.
	p := filepath.Clean(dir)
	for {
		fi, statErr := os.Stat(p)
		if statErr == nil {
			switch {
			case !fi.IsDir():
				return fmt.Sprintf("%s is a %s, not a directory (%v)", p, fileKind(fi), err)
			case errors.Is(err, fs.ErrPermission):
				return fmt.Sprintf("permission denied: %s (mode %v) is not writable by this process (%v)", p, fi.Mode().Perm(), err)
			}
			return err.Error()
		}
		parent := filepath.Dir(p)
		if parent == p {
			return err.Error()
		}
		if errors.Is(statErr, fs.ErrPermission) {
			return fmt.Sprintf("permission denied: cannot look into %s (%v)", parent, err)
		}
		if !errors.Is(statErr, fs.ErrNotExist) && !isNotDir(statErr) {
			return err.Error()
		}
		p = parent
	}
}

func isNotDir(err error) bool { return errors.Is(err, syscall.ENOTDIR) }

func fileKind(fi fs.FileInfo) string {
	switch m := fi.Mode(); {
	case m.IsRegular():
		return "regular file"
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	default:
		return "non-directory file (" + m.Type().String() + ")"
	}
}
