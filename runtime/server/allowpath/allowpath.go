package allowpath

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/flinkgo/flinkgo/internal/beneath"
	"github.com/flinkgo/flinkgo/internal/objstore"
)

// Flag is the server's flag that adds a root, named in refusals.
const Flag = "--allow-path"

// Roots is a set of allowed directories, or every path. The zero value
// allows nothing.
type Roots struct {
	any   bool
	roots []root
	// objects are allowed object-storage prefixes (s3://bucket/prefix,
	// cleaned): an s3:// path is allowed only under one of them (or when
	// any path is), since the server's S3 credentials would otherwise
	// reach every bucket they can.
	objects []string
}

// root is one allowed directory: its path as given (absolute, cleaned)
// and with its links resolved, and the directory opened once, from which
// every client path under it is opened.
type root struct {
	given, real string
	dir         *beneath.Root
}

// Any allows every path: the embedded runtime, which runs as its only
// client's user.
func Any() *Roots { return &Roots{any: true} }

// New allows the existing directories dirs and what lies under them. Each
// is opened now: a client path is later opened from that directory, not
// by name.
func New(dirs []string) (*Roots, error) {
	r := &Roots{}
	for _, d := range dirs {
		if objstore.IsURL(d) {
			bucket, key, err := objstore.Split(d)
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", Flag, d, err)
			}
			r.objects = append(r.objects, strings.TrimSuffix(objstore.Join(objstore.Scheme+bucket, key), "/"))
			continue
		}
		given, err := filepath.Abs(d)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", Flag, d, err)
		}
		real, err := filepath.EvalSymlinks(given)
		if err != nil {
			return nil, fmt.Errorf("%s %s: not an existing directory: %w", Flag, d, err)
		}
		if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("%s %s: not an existing directory", Flag, d)
		}
		if real == "/" {
			return Any(), nil
		}
		dir, err := beneath.OpenRoot(real)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", Flag, d, err)
		}
		r.roots = append(r.roots, root{given: given, real: real, dir: dir})
	}
	return r, nil
}

// AllowsAny says whether every path is allowed.
func (r *Roots) AllowsAny() bool { return r.any }

// String lists the roots.
func (r *Roots) String() string {
	if r.any {
		return "any path"
	}
	var all []string
	for _, root := range r.roots {
		all = append(all, root.real)
	}
	all = append(all, r.objects...)
	if len(all) == 0 {
		return "no path"
	}
	return strings.Join(all, ", ")
}

// Check returns nil when path lies under a root and passes through no
// symbolic link below it, else an error naming what the path is for, the
// path, the roots and the flag. It is the early answer at submission;
// Open and Dir apply the same rule again at the use.
func (r *Roots) Check(what, path string) error {
	if r.any {
		return nil
	}
	if objstore.IsURL(path) {
		return r.checkObject(what, path)
	}
	root, rel, err := r.locate(what, path)
	if err != nil {
		return err
	}
	cur := root.real
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		if part == "." {
			continue
		}
		cur = filepath.Join(cur, part)
		fi, err := os.Lstat(cur)
		if errors.Is(err, fs.ErrNotExist) {
			return nil // the rest is created as written
		}
		if err != nil {
			return fmt.Errorf("%s %q cannot be checked against the allowed directories (%s): %w", what, path, r, err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return fmt.Errorf("%s %q passes through the symbolic link %s (%s); name the directory it leads to, under %s, or start the server with %s DIR to allow that one",
				what, path, cur, beneath.Rule, r, Flag)
		}
	}
	return nil
}

// Open opens the file at path for reading, from the root it lies under.
func (r *Roots) Open(what, path string) (*os.File, error) {
	if r.any {
		return os.Open(path)
	}
	root, rel, err := r.locate(what, path)
	if err != nil {
		return nil, err
	}
	f, err := root.dir.OpenFile(rel, os.O_RDONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("%s %q: %w", what, path, err)
	}
	return f, nil
}

// Dir opens the directory at path from the root it lies under (making
// what is missing of it when create) and keeps it open: see beneath.Dir.
func (r *Roots) Dir(what, path string, create bool) (*beneath.Dir, error) {
	if r.any {
		return beneath.Named(path, create)
	}
	root, rel, err := r.locate(what, path)
	if err != nil {
		return nil, err
	}
	d, err := root.dir.Dir(rel, create)
	if err != nil {
		return nil, fmt.Errorf("%s %q: %w", what, path, err)
	}
	return d, nil
}

// locate finds the root path lies under, lexically (".." applied to the
// names as written: no link below a root is followed anyway), and the
// path relative to it.
func (r *Roots) locate(what, path string) (root, string, error) {
	if path == "" {
		return root{}, "", fmt.Errorf("%s is empty", what)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return root{}, "", fmt.Errorf("%s %q: %w", what, path, err)
	}
	for _, root := range r.roots {
		for _, prefix := range []string{root.real, root.given} {
			if abs == prefix {
				return root, ".", nil
			}
			if rest, ok := strings.CutPrefix(abs, prefix+string(filepath.Separator)); ok {
				return root, rest, nil
			}
		}
	}
	shown := fmt.Sprintf("%q", path)
	if abs != path {
		shown += fmt.Sprintf(" (%s)", abs)
	}
	return root{}, "", fmt.Errorf("%s %s is outside the directories this server lets clients use (%s); pick a path under one of them, or start the server with %s DIR to allow another",
		what, shown, r, Flag)
}

// checkObject checks an s3:// path against the object-storage roots: the
// path, cleaned ("a/../b" is "b"), must be a root or lie under one.
func (r *Roots) checkObject(what, path string) error {
	bucket, key, err := objstore.Split(path)
	if err != nil {
		return fmt.Errorf("%s %q: %w", what, path, err)
	}
	clean := strings.TrimSuffix(objstore.Join(objstore.Scheme+bucket, key), "/")
	for _, root := range r.objects {
		if clean == root || strings.HasPrefix(clean, root+"/") {
			return nil
		}
	}
	return fmt.Errorf("%s %q is object storage outside the prefixes this server lets clients use (%s); "+
		"start the server with %s s3://BUCKET/PREFIX to allow one", what, path, r, Flag)
}
