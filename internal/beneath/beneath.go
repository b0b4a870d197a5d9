package beneath

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Rule is the rule a refusal cites.
const Rule = "a client's path is opened from the allowed directory it lies under and may not pass through a symbolic link below it, nor leave it by \"..\""

// Paths opens the paths a client names; what says what a path is for, in
// errors. *allowpath.Roots is one.
type Paths interface {
	// Open opens the file at path for reading.
	Open(what, path string) (*os.File, error)
	// Dir opens the directory at path, creating what is missing of it
	// when create.
	Dir(what, path string, create bool) (*Dir, error)
}

// Open opens path for reading through p; a nil p opens it as named.
func Open(p Paths, what, path string) (*os.File, error) {
	if p == nil {
		return os.Open(path)
	}
	return p.Open(what, path)
}

// OpenDir opens the directory path through p; a nil p returns it as named
// (created when create).
func OpenDir(p Paths, what, path string, create bool) (*Dir, error) {
	if p == nil {
		return Named(path, create)
	}
	return p.Dir(what, path, create)
}

// Dir is a directory a client named. Work inside it by Path.
type Dir struct {
	name string
	path string
	f    *os.File // nil for a Named directory
}

// Named is the directory at path taken as named, without an open
// descriptor: for servers that allow any path. With create, it is made
// (as os.MkdirAll).
func Named(path string, create bool) (*Dir, error) {
	if create {
		if err := os.MkdirAll(path, 0o755); err != nil {
			return nil, err
		}
	}
	return &Dir{name: path, path: path}, nil
}

// Name is the directory's path as the client named it, for messages and
// for what outlives the process (checkpointed part names).
func (d *Dir) Name() string { return d.name }

// Path names the directory for work inside it: /proc/self/fd/N on Linux
// when it was opened beneath a root (valid until Close), else Name.
func (d *Dir) Path() string { return d.path }

// Pinned says whether Path reaches the directory through its open
// descriptor, so that a swap of a parent after the open cannot move it.
func (d *Dir) Pinned() bool { return d.path != d.name }

// Logical maps a path under Path back to the same path under Name.
func (d *Dir) Logical(p string) string {
	if rest, ok := strings.CutPrefix(p, d.path); ok && (rest == "" || rest[0] == filepath.Separator) {
		return d.name + rest
	}
	return p
}

// Sub opens the directory rel beneath d as Root.Dir does beneath a root
// (making it when create), from d's descriptor: a swap of d's name after
// d was opened cannot move it. A Named d gives a Named directory.
func (d *Dir) Sub(rel string, create bool) (*Dir, error) {
	if d.f == nil {
		return Named(filepath.Join(d.name, rel), create)
	}
	return (&Root{name: d.name, fd: int(d.f.Fd())}).Dir(rel, create)
}

// Close releases the descriptor; Path is invalid after it.
func (d *Dir) Close() error {
	if d == nil || d.f == nil {
		return nil
	}
	return d.f.Close()
}

// Root is an allowed directory, open.
type Root struct {
	name string
	fd   int
}

// OpenRoot opens the directory dir.
func OpenRoot(dir string) (*Root, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	return &Root{name: dir, fd: fd}, nil
}

// Name is the root's path.
func (r *Root) Name() string { return r.name }

// Close closes the root's descriptor.
func (r *Root) Close() error { return unix.Close(r.fd) }

// OpenFile opens rel, a path relative to the root, with flag and perm (as
// os.OpenFile), refusing symbolic links and escapes (see Rule).
func (r *Root) OpenFile(rel string, flag int, perm os.FileMode) (*os.File, error) {
	rel, err := r.relative(rel)
	if err != nil {
		return nil, err
	}
	fd, err := openBeneath(r.fd, rel, flag|unix.O_CLOEXEC, uint32(perm.Perm()))
	if err != nil {
		return nil, r.refusal(rel, err)
	}
	return os.NewFile(uintptr(fd), filepath.Join(r.name, rel)), nil
}

// Dir opens the directory rel beneath the root one component at a time,
// making the missing ones (0755) when create, and keeps it open.
func (r *Root) Dir(rel string, create bool) (*Dir, error) {
	rel, err := r.relative(rel)
	if err != nil {
		return nil, err
	}
	fd, err := unix.Openat(r.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, r.refusal(".", err)
	}
	walked := ""
	for _, part := range strings.Split(rel, "/") {
		if part == "." {
			continue
		}
		walked = filepath.Join(walked, part)
		next, err := openBeneath(fd, part, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) && create {
			if err = unix.Mkdirat(fd, part, 0o755); err == nil || errors.Is(err, unix.EEXIST) {
				next, err = openBeneath(fd, part, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			}
		}
		_ = unix.Close(fd)
		if err != nil {
			return nil, r.refusal(walked, err)
		}
		fd = next
	}
	name := filepath.Join(r.name, rel)
	f := os.NewFile(uintptr(fd), name)
	return &Dir{name: name, path: pinnedPath(fd, name), f: f}, nil
}

// relative cleans rel and refuses one that leaves the root lexically.
func (r *Root) relative(rel string) (string, error) {
	clean := filepath.Clean(filepath.ToSlash(rel))
	if filepath.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") {
		return "", fmt.Errorf("%s leaves %s (%s)", rel, r.name, Rule)
	}
	return clean, nil
}

// refusal explains why rel could not be opened.
func (r *Root) refusal(rel string, err error) error {
	full := filepath.Join(r.name, rel)
	switch {
	case errors.Is(err, unix.ELOOP):
		return fmt.Errorf("%s passes through a symbolic link (%s): %w", full, Rule, syscall.ELOOP)
	case errors.Is(err, unix.EXDEV):
		return fmt.Errorf("%s leaves %s (%s): %w", full, r.name, Rule, err)
	case errors.Is(err, unix.ENOTDIR):
		return fmt.Errorf("%s: a part of it is not a directory (or is a symbolic link: %s): %w", full, Rule, err)
	}
	return &os.PathError{Op: "open", Path: full, Err: err}
}

// walk opens rel beneath dirfd one component at a time with O_NOFOLLOW:
// where openat2 is missing.
func walk(dirfd int, rel string, flag int, mode uint32) (int, error) {
	parts := strings.Split(rel, "/")
	fd := dirfd
	defer func() {
		if fd != dirfd {
			_ = unix.Close(fd)
		}
	}()
	for i, part := range parts {
		if part == ".." {
			return -1, unix.EXDEV // relative cleaned rel; any ".." left leaves
		}
		if i == len(parts)-1 {
			opened, err := unix.Openat(fd, part, flag|unix.O_NOFOLLOW, mode)
			if errors.Is(err, unix.ENOTDIR) && isLink(fd, part) {
				err = unix.ELOOP
			}
			return opened, err
		}
		next, err := unix.Openat(fd, part, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOTDIR) && isLink(fd, part) {
			err = unix.ELOOP // O_DIRECTORY answers a link with ENOTDIR
		}
		if err != nil {
			return -1, err
		}
		if fd != dirfd {
			_ = unix.Close(fd)
		}
		fd = next
	}
	return -1, unix.ENOENT
}

// isLink says whether name in the directory dirfd is a symbolic link.
func isLink(dirfd int, name string) bool {
	var st unix.Stat_t
	return unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK
}

// ShowNames turns the work paths (Path) in err's message back into the
// directory's name (Name), keeping err's chain for errors.Is and As: the
// descriptor a file was reached through means nothing to the user.
func (d *Dir) ShowNames(err error) error {
	if err == nil || d == nil || !d.Pinned() || !strings.Contains(err.Error(), d.path) {
		return err
	}
	return &renamed{msg: strings.ReplaceAll(err.Error(), d.path, d.name), err: err}
}

// renamed is an error whose message names paths as the user does.
type renamed struct {
	msg string
	err error
}

func (e *renamed) Error() string { return e.msg }
func (e *renamed) Unwrap() error { return e.err }

// OpenIn opens rel beneath the directory dir (a name, or a Dir's Path)
// refusing symbolic links and escapes (see Rule): for reading the files a
// snapshot lists, whose names come from a file a client may have written.
func OpenIn(dir, rel string) (*os.File, error) {
	root, err := OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	return root.OpenFile(rel, os.O_RDONLY, 0)
}
