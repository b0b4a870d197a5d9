package objstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
)

// Scheme is the prefix of object storage paths.
const Scheme = "s3://"

// ErrExists is returned by PutIfAbsent when the object exists already.
var ErrExists = errors.New("object exists")

// ErrNotExist is wrapped by errors about a missing object; it is
// fs.ErrNotExist, so errors.Is(err, fs.ErrNotExist) holds too.
var ErrNotExist = fs.ErrNotExist

// Object is one listed object.
type Object struct {
	URL  string // s3://bucket/key
	Size int64
}

// Store is an object store addressed by s3://bucket/key URLs. Every method
// is safe for concurrent use.
type Store interface {
	// Upload writes the local file src to url, replacing any object there.
	// Large files are uploaded in parts.
	Upload(ctx context.Context, url, src string) error
	// PutIfAbsent writes data to url only when no object is there (a
	// conditional put), else fails with ErrExists.
	PutIfAbsent(ctx context.Context, url string, data []byte) error
	// Download writes the object at url to the local file dst (a
	// temporary name renamed at the end, so dst is never partial).
	Download(ctx context.Context, url, dst string) error
	// Read returns the object at url.
	Read(ctx context.Context, url string) ([]byte, error)
	// Size returns the size of the object at url; an error wrapping
	// ErrNotExist when there is none.
	Size(ctx context.Context, url string) (int64, error)
	// List returns the objects whose URL starts with prefix.
	List(ctx context.Context, prefix string) ([]Object, error)
	// Delete removes the objects; missing ones are not an error.
	Delete(ctx context.Context, urls []string) error
}

// IsURL reports whether p names object storage (s3://...) rather than a
// local path.
func IsURL(p string) bool { return strings.HasPrefix(p, Scheme) }

// Split returns the bucket and key of an s3:// URL.
func Split(url string) (bucket, key string, err error) {
	if !IsURL(url) {
		return "", "", fmt.Errorf("objstore: %q is not an %sbucket/key URL", url, Scheme)
	}
	rest := strings.TrimPrefix(url, Scheme)
	bucket, key, _ = strings.Cut(rest, "/")
	if bucket == "" {
		return "", "", fmt.Errorf("objstore: %q names no bucket (give %sbucket/prefix)", url, Scheme)
	}
	return bucket, key, nil
}

// Join joins path elements to an s3:// URL, cleaning the key ("a//b" and
// "a/./b" become "a/b"); elements never climb above the bucket.
func Join(base string, elem ...string) string {
	bucket, key, err := Split(base)
	if err != nil {
		return path.Join(append([]string{base}, elem...)...)
	}
	k := path.Join(append([]string{"/", key}, elem...)...)
	return Scheme + bucket + k
}

// Dir returns the URL of url's parent "directory".
func Dir(url string) string {
	bucket, key, err := Split(url)
	if err != nil {
		return path.Dir(url)
	}
	d := path.Dir("/" + key)
	if d == "/" {
		return Scheme + bucket
	}
	return Scheme + bucket + d
}
