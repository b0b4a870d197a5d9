package checkpoint

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/flinkgo/flinkgo/internal/objstore"
)

// Checkpoint and savepoint paths are local directories or s3:// URLs
// (object storage, package objstore); these helpers treat both.

// joinPath joins elem to dir.
func joinPath(dir string, elem ...string) string {
	if objstore.IsURL(dir) {
		return objstore.Join(dir, elem...)
	}
	return filepath.Join(append([]string{dir}, elem...)...)
}

// ParentDir is filepath.Dir for local paths and the parent prefix for
// s3:// URLs.
func ParentDir(p string) string {
	if objstore.IsURL(p) {
		return objstore.Dir(strings.TrimSuffix(p, "/"))
	}
	return filepath.Dir(p)
}

// removeAll deletes a directory, or every object under an s3:// prefix.
func removeAll(dir string) error {
	if !objstore.IsURL(dir) {
		return os.RemoveAll(dir)
	}
	store, err := objstore.ForURL(dir)
	if err != nil {
		return err
	}
	ctx := context.Background()
	objs, err := store.List(ctx, strings.TrimSuffix(dir, "/")+"/")
	if err != nil {
		return err
	}
	urls := make([]string, len(objs))
	for i, o := range objs {
		urls[i] = o.URL
	}
	return store.Delete(ctx, urls)
}

// listObjects lists the objects whose URL starts with prefix.
func listObjects(prefix string) ([]objstore.Object, error) {
	store, err := objstore.ForURL(prefix)
	if err != nil {
		return nil, err
	}
	return store.List(context.Background(), prefix)
}

// deleteObjects deletes objects (s3:// URLs).
func deleteObjects(urls []string) error {
	if len(urls) == 0 {
		return nil
	}
	store, err := objstore.ForURL(urls[0])
	if err != nil {
		return err
	}
	return store.Delete(context.Background(), urls)
}

// removeFile deletes a file or an object.
func removeFile(p string) error {
	if !objstore.IsURL(p) {
		return os.Remove(p)
	}
	store, err := objstore.ForURL(p)
	if err != nil {
		return err
	}
	return store.Delete(context.Background(), []string{p})
}

// dirSize is the bytes of the files under a directory, or of the objects
// under an s3:// prefix.
func dirSize(dir string) (int64, error) {
	var n int64
	if objstore.IsURL(dir) {
		objs, err := listObjects(strings.TrimSuffix(dir, "/") + "/")
		for _, o := range objs {
			n += o.Size
		}
		return n, err
	}
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			n += info.Size()
		}
		return nil
	})
	return n, err
}
