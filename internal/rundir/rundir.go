package rundir

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Prefix starts the name of every runtime directory.
const Prefix = "flinkgo-rt-"

// LockName is the owner's lock file inside a runtime directory.
const LockName = "owner.lock"

// orphanAge is how old a runtime directory without a lock file must be
// before Sweep takes it for the leftover of an owner that died between
// creating it and its lock; younger, its owner may be creating the lock now.
const orphanAge = time.Minute

// Dir is this process's runtime directory, locked while it lives.
type Dir struct {
	// Path is the directory.
	Path string
	lock *os.File
}

// Create makes a new runtime directory (0700) under base and locks it for
// this process.
func Create(base string) (*Dir, error) {
	path, err := os.MkdirTemp(base, Prefix)
	if err != nil {
		return nil, fmt.Errorf("runtime directory: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(path, LockName), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err == nil {
		err = syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			_, err = lock.WriteString(strconv.Itoa(os.Getpid()) + "\n")
		}
		if err != nil {
			_ = lock.Close()
		}
	}
	if err != nil {
		_ = os.RemoveAll(path)
		return nil, fmt.Errorf("runtime directory %s: lock: %w", path, err)
	}
	return &Dir{Path: path, lock: lock}, nil
}

// Remove deletes the directory and releases its lock. Safe to call twice.
func (d *Dir) Remove() error {
	if d.lock == nil {
		return nil
	}
	err := os.RemoveAll(d.Path)
	_ = d.lock.Close()
	d.lock = nil
	return err
}

// Sweep removes the runtime directories under base whose owner is dead,
// and returns them. It only looks at directories of this user; a live
// owner's directory, and one still being created, are left alone. Errors
// on one directory are logged and do not stop the others.
func Sweep(base string, log *slog.Logger) []string {
	entries, err := os.ReadDir(base)
	if err != nil {
		log.Warn("cannot list the temp dir to remove dead runtimes' directories", "dir", base, "error", err)
		return nil
	}
	var removed []string
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), Prefix) {
			continue
		}
		path := filepath.Join(base, e.Name())
		dead, err := deadOwner(path)
		if err != nil {
			log.Warn("cannot tell whether a runtime directory's owner lives", "dir", path, "error", err)
			continue
		}
		if dead {
			removed = append(removed, path)
		}
	}
	return removed
}

// deadOwner removes path when its owner is dead, holding the dead owner's
// lock meanwhile so two sweepers never both remove it, and reports whether
// it did.
func deadOwner(path string) (bool, error) {
	info, err := os.Lstat(path)
	if err != nil {
		return false, nil // removed meanwhile
	}
	if st, ok := info.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != os.Geteuid() || !info.IsDir() {
		return false, nil // another user's, or not a plain directory
	}
	lock, err := os.OpenFile(filepath.Join(path, LockName), os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		if time.Since(info.ModTime()) < orphanAge {
			return false, nil
		}
		return true, os.RemoveAll(path)
	}
	if err != nil {
		return false, err
	}
	defer lock.Close()
	err = syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return false, nil // its owner lives
	}
	if err != nil {
		return false, err
	}
	return true, os.RemoveAll(path)
}
