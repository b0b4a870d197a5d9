//go:build unix && !linux

package beneath

import (
	"errors"
	"os"
)

// openBeneath opens rel beneath dirfd one component at a time with
// O_NOFOLLOW (openat2 is Linux's).
func openBeneath(dirfd int, rel string, flag int, mode uint32) (int, error) {
	return walk(dirfd, rel, flag, mode)
}

// pinnedPath is the name: without /proc/self/fd, work inside the directory
// goes by name again.
func pinnedPath(_ int, name string) string { return name }

// LinkOpened is unsupported without /proc/self/fd: the caller copies.
func LinkOpened(f *os.File, dst string) error {
	return &os.LinkError{Op: "link", Old: f.Name(), New: dst, Err: errors.ErrUnsupported}
}
