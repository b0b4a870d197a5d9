package allowpath

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/flinkgo/flinkgo/internal/objstore"
)

// Flag is the server's flag that adds a root, named in refusals.
const Flag = "--allow-path"

// maxLinks bounds the symbolic links followed in one path, as the kernel's
// ELOOP does.
const maxLinks = 40

// Roots is a set of allowed directories, or every path. The zero value
// allows nothing.
type Roots struct {
	any   bool
	roots []string // resolved
	// objects are allowed object-storage prefixes (s3://bucket/prefix,
	// cleaned): an s3:// path is allowed only under one of them (or when
	// any path is), since the server's S3 credentials would otherwise
	// reach every bucket they can.
	objects []string
}

// Any allows every path: the embedded runtime, which runs as its only
// client's user.
func Any() *Roots { return &Roots{any: true} }

// New allows the existing directories dirs and what lies under them.
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
		real, err := resolve(d)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", Flag, d, err)
		}
		fi, err := os.Stat(real)
		if err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("%s %s: not an existing directory", Flag, d)
		}
		if real == "/" {
			return Any(), nil
		}
		r.roots = append(r.roots, real)
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
	all := append(slices.Clone(r.roots), r.objects...)
	if len(all) == 0 {
		return "no path"
	}
	return strings.Join(all, ", ")
}

// Check returns nil when path lies under a root, else an error naming
// what the path is for, the path, the roots and the flag.
func (r *Roots) Check(what, path string) error {
	if r.any {
		return nil
	}
	if objstore.IsURL(path) {
		return r.checkObject(what, path)
	}
	real, err := resolve(path)
	if err != nil {
		return fmt.Errorf("%s %q cannot be checked against the allowed directories (%s): %w", what, path, r, err)
	}
	for _, root := range r.roots {
		if real == root || strings.HasPrefix(real, root+string(filepath.Separator)) {
			return nil
		}
	}
	shown := fmt.Sprintf("%q", path)
	if real != path {
		shown += fmt.Sprintf(" (%s)", real)
	}
	return fmt.Errorf("%s %s is outside the directories this server lets clients use (%s); pick a path under one of them, or start the server with %s DIR to allow another",
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

// resolve returns the absolute path that p names once every existing
// symbolic link is followed and ".." is applied after the links before it.
func resolve(p string) (string, error) {
	if p == "" {
		return "", errors.New("empty path")
	}
	if !filepath.IsAbs(p) {
		wd, err := os.Getwd()
		if err != nil {
			return "", err
		}
		p = wd + string(filepath.Separator) + p
	}
	cur := string(filepath.Separator)
	rest := strings.Split(p, string(filepath.Separator))
	links := 0
	for len(rest) > 0 {
		part := rest[0]
		rest = rest[1:]
		switch part {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, part)
		fi, err := os.Lstat(next)
		if errors.Is(err, fs.ErrNotExist) {
			// Nothing below exists yet: it is created as written.
			return filepath.Join(append([]string{next}, rest...)...), nil
		}
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		if links++; links > maxLinks {
			return "", fmt.Errorf("more than %d symbolic links", maxLinks)
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", err
		}
		if filepath.IsAbs(target) {
			cur = string(filepath.Separator)
		}
		rest = append(strings.Split(target, string(filepath.Separator)), rest...)
	}
	return cur, nil
}
