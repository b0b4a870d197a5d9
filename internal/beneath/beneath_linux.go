package beneath

import (
	"errors"
	"os"
	"strconv"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// noOpenat2 is set once openat2 turned out missing (a kernel before 5.6, or
// a seccomp filter that does not know it).
var noOpenat2 atomic.Bool

// openBeneath opens rel beneath dirfd: openat2 with RESOLVE_BENEATH |
// RESOLVE_NO_SYMLINKS, else the O_NOFOLLOW walk.
func openBeneath(dirfd int, rel string, flag int, mode uint32) (int, error) {
	if !noOpenat2.Load() {
		how := &unix.OpenHow{Flags: uint64(flag), Mode: uint64(mode), Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS}
		for {
			fd, err := unix.Openat2(dirfd, rel, how)
			if errors.Is(err, unix.EINTR) || errors.Is(err, unix.EAGAIN) {
				continue // EAGAIN: a concurrent rename; the kernel asks to retry
			}
			if !errors.Is(err, unix.ENOSYS) && !errors.Is(err, unix.EPERM) {
				return fd, err
			}
			break
		}
		noOpenat2.Store(true)
	}
	return walk(dirfd, rel, flag, mode)
}

// pinnedPath names the open directory fd through /proc/self/fd when /proc
// is mounted, else by name.
func pinnedPath(fd int, name string) string {
	p := "/proc/self/fd/" + strconv.Itoa(fd)
	if fi, err := os.Stat(p); err != nil || !fi.IsDir() {
		return name
	}
	return p
}

// LinkOpened makes dst a hard link to the open file f, through its
// descriptor rather than its name (linkat of /proc/self/fd/N with
// AT_SYMLINK_FOLLOW), so that no name is resolved again between the open
// and the link.
func LinkOpened(f *os.File, dst string) error {
	err := unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(int(f.Fd())), unix.AT_FDCWD, dst, unix.AT_SYMLINK_FOLLOW)
	if err != nil {
		return &os.LinkError{Op: "link", Old: f.Name(), New: dst, Err: err}
	}
	return nil
}
