package state

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/flinkgo/flinkgo/internal/objstore"
)

// Checkpoint storage on object storage (docs/semantics.md#checkpoints): a
// Storage whose Root, or a savepoint or restore base, is an s3:// URL. The
// layout is the local one, as object keys: <root>/shared/<name>,
// <root>/chk-<n>/<uid>-<subtask>/<file>. Files are uploaded, never
// linked; shared sstables are uploaded once per backend instance and
// referenced by every later checkpoint that still holds them.

// remoteStore returns the object store of url.
func remoteStore(url string) (objstore.Store, error) {
	s, err := objstore.ForURL(url)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStorage, err)
	}
	return s, nil
}

// uploadedFiles are the shared files a backend instance uploaded.
type uploadedFiles struct {
	mu sync.Mutex
	m  map[string]int64 // URL -> size
}

func (u *uploadedFiles) size(url string) (int64, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	n, ok := u.m[url]
	return n, ok
}

func (u *uploadedFiles) add(url string, size int64) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.m == nil {
		u.m = make(map[string]int64)
	}
	u.m[url] = size
}

// join joins a slash-separated relative path to a local directory or an
// s3:// URL.
func join(base string, rel ...string) string {
	if objstore.IsURL(base) {
		return objstore.Join(base, rel...)
	}
	parts := append([]string{base}, rel...)
	for i := 1; i < len(parts); i++ {
		parts[i] = filepath.FromSlash(parts[i])
	}
	return filepath.Join(parts...)
}

// initRemote checks that the storage can be written: it puts a probe
// object into shared/ and deletes it.
func (s Storage) initRemote() error {
	store, err := remoteStore(s.Root)
	if err != nil {
		return err
	}
	ctx := context.Background()
	probe := objstore.Join(s.SharedDir(), ".probe-"+randomHex(6))
	if err := store.PutIfAbsent(ctx, probe, nil); err != nil {
		return fmt.Errorf("%w: checkpoint storage %s is not writable: %w", ErrStorage, s.Root, err)
	}
	if err := store.Delete(ctx, []string{probe}); err != nil {
		return fmt.Errorf("%w: checkpoint storage %s: cannot delete objects: %w", ErrStorage, s.Root, err)
	}
	return nil
}

// removeRemote deletes every object under prefix (a "directory").
func removeRemote(ctx context.Context, prefix string) error {
	store, err := remoteStore(prefix)
	if err != nil {
		return err
	}
	objs, err := store.List(ctx, strings.TrimSuffix(prefix, "/")+"/")
	if err != nil {
		return err
	}
	urls := make([]string, len(objs))
	for i, o := range objs {
		urls[i] = o.URL
	}
	return store.Delete(ctx, urls)
}

// upload is one file of a snapshot to put into object storage.
type upload struct {
	src, url string
	ref      FileRef
	shared   bool // skip when the object exists with the size
}

// persistRemote is Persist into object storage: private files to
// chk-<n>/<uid>-<subtask>/, sstables to shared/ once, uploads in parallel
// (the client bounds the requests in flight).
func (p *PendingSnapshot) persistRemote(ctx context.Context, st Storage) (Handle, error) {
	store, err := remoteStore(st.Root)
	if err != nil {
		return Handle{}, err
	}
	sub := p.b.subdirName()
	privRel := path.Join("chk-"+strconv.FormatInt(p.checkpointID, 10), sub)
	privURL := objstore.Join(st.Root, privRel)
	// Private files of an earlier attempt at this checkpoint go first.
	if err := removeRemote(ctx, privURL); err != nil {
		return Handle{}, fmt.Errorf("%w: %w", ErrStorage, err)
	}
	h := p.handle(false)
	inherit := p.b.inherit
	if inherit.root != st.Root {
		inherit.paths = nil // restored from another storage: upload anew
	}
	ups := make([]upload, len(p.files))
	for i, f := range p.files {
		src := filepath.Join(p.dir, f.name)
		h.StateSize += f.size
		if !immutableFile(f.name) {
			rel := path.Join(privRel, f.name)
			ups[i] = upload{src: src, url: objstore.Join(st.Root, rel), ref: FileRef{Name: f.name, Path: rel, Size: f.size}}
			continue
		}
		rel := sharedPrefix + p.b.sharedName(f.name)
		if inh := inherit.paths[f.name]; inh != "" {
			rel = inh
		}
		ups[i] = upload{src: src, url: objstore.Join(st.Root, rel), ref: FileRef{Name: f.name, Path: rel, Size: f.size, Shared: true}, shared: true}
	}
	written, err := uploadAll(ctx, store, &p.b.uploaded, ups)
	if err != nil {
		var priv []string
		for _, u := range ups {
			if !u.shared {
				priv = append(priv, u.url)
			}
		}
		// Best effort: shared uploads stay for SharedRegistry.Sweep.
		_ = store.Delete(context.WithoutCancel(ctx), priv)
		if cause := context.Cause(ctx); cause != nil && !errors.Is(err, cause) {
			err = fmt.Errorf("%w (%w)", cause, err)
		}
		return Handle{}, fmt.Errorf("%w: %w", ErrStorage, err)
	}
	h.BytesWritten = written
	for _, u := range ups {
		h.Files = append(h.Files, u.ref)
	}
	return h, nil
}

// uploadAll uploads ups in parallel and returns the bytes written. A
// shared file this backend instance uploaded before is not written again;
// one it did not (inherited from a restore, or of another instance) is
// checked with a HEAD request and written only when missing or of another
// size. The client's concurrency bounds the requests; this bounds the
// goroutines to the same.
func uploadAll(ctx context.Context, store objstore.Store, uploaded *uploadedFiles, ups []upload) (int64, error) {
	limit := 8
	if c, ok := store.(interface{ Concurrency() int }); ok {
		limit = c.Concurrency()
	}
	written := make([]int64, len(ups))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(limit)
	for i, u := range ups {
		g.Go(func() error {
			if u.shared {
				if n, ok := uploaded.size(u.url); ok && n == u.ref.Size {
					return nil
				}
				switch n, err := store.Size(gctx, u.url); {
				case err == nil && n == u.ref.Size:
					uploaded.add(u.url, n)
					return nil
				case err == nil:
					return fmt.Errorf("shared object %s exists with %d bytes, but the sstable it names has %d", u.url, n, u.ref.Size)
				case !errors.Is(err, objstore.ErrNotExist):
					return err
				}
			}
			if err := store.Upload(gctx, u.url, u.src); err != nil {
				return err
			}
			if u.shared {
				uploaded.add(u.url, u.ref.Size)
			}
			written[i] = u.ref.Size
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return 0, err
	}
	var n int64
	for _, w := range written {
		n += w
	}
	return n, nil
}

// persistSelfContainedRemote is PersistSelfContained into an s3:// savepoint
// directory: every file under dir/<uid>-<subtask>/.
func (p *PendingSnapshot) persistSelfContainedRemote(ctx context.Context, dir string) (Handle, error) {
	store, err := remoteStore(dir)
	if err != nil {
		return Handle{}, err
	}
	sub := p.b.subdirName()
	target := objstore.Join(dir, sub)
	if err := removeRemote(ctx, target); err != nil {
		return Handle{}, fmt.Errorf("%w: %w", ErrStorage, err)
	}
	h := p.handle(true)
	ups := make([]upload, len(p.files))
	for i, f := range p.files {
		rel := path.Join(sub, f.name)
		h.StateSize += f.size
		ups[i] = upload{src: filepath.Join(p.dir, f.name), url: objstore.Join(dir, rel), ref: FileRef{Name: f.name, Path: rel, Size: f.size}}
	}
	written, err := uploadAll(ctx, store, &p.b.uploaded, ups)
	if err != nil {
		_ = removeRemote(context.WithoutCancel(ctx), target)
		return Handle{}, fmt.Errorf("%w: %w", ErrStorage, err)
	}
	h.BytesWritten = written
	for _, u := range ups {
		h.Files = append(h.Files, u.ref)
	}
	return h, nil
}

// materializeRemote downloads the files of snapshot h, relative to the
// s3:// base, into dir, in parallel. Only the handles whose key groups
// the restoring backend needs get here (checkHandles), so a subtask
// downloads no other subtask's files.
func materializeRemote(ctx context.Context, base string, h Handle, dir string) error {
	store, err := remoteStore(base)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	limit := 8
	if c, ok := store.(interface{ Concurrency() int }); ok {
		limit = c.Concurrency()
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(limit)
	for _, f := range h.Files {
		g.Go(func() error {
			src := objstore.Join(base, f.Path)
			dst := filepath.Join(dir, f.Name)
			err := store.Download(gctx, src, dst)
			switch {
			case errors.Is(err, objstore.ErrNotExist):
				return fmt.Errorf("%w: %v: missing object %s", ErrStorage, h, src)
			case err != nil:
				return fmt.Errorf("%w: %v: %w", ErrStorage, h, err)
			}
			fi, err := os.Stat(dst)
			if err != nil {
				return fmt.Errorf("%w: %v: %w", ErrStorage, h, err)
			}
			if fi.Size() != f.Size {
				return fmt.Errorf("%w: %v: object %s has %d bytes, the handle says %d", ErrStorage, h, src, fi.Size(), f.Size)
			}
			return nil
		})
	}
	return g.Wait()
}
