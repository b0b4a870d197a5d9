package state

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/cockroachdb/pebble/v2"

	"github.com/flinkgo/flinkgo/internal/beneath"
	"github.com/flinkgo/flinkgo/internal/objstore"
	"golang.org/x/sync/errgroup"
)

// Restore returns a backend for opts holding the state of the key groups
// opts.KeyGroups found in handles: the handles of every subtask of the
// operator in one checkpoint or savepoint. base is the directory the
// handles' paths are relative to: the checkpoint root (Storage.Root) for
// handles of Persist, the savepoint directory for handles of
// PersistSelfContained; all handles must be of one kind.
//
// Handles whose key groups do not intersect opts.KeyGroups are ignored (no
// handle intersecting: an empty backend). When one handle has exactly
// opts.KeyGroups, its files are linked (sstables) or copied into the
// working directory and opened: no data is copied, and the next checkpoint
// into the same storage reuses its shared files. Otherwise (rescaling) each
// intersecting snapshot is linked into a scratch directory, opened
// read-only, and the span of the intersecting key groups is copied into
// sstables that the new database ingests; keys of other key groups never
// reach it. Either way, entries of states with a TTL that have expired by
// opts.Clock are dropped.
//
// Restore fails with ErrIncompatibleHandle when a handle's max parallelism
// or operator uid differ from opts, or handles' key groups overlap, with
// ErrInvalidOptions on bad options (key groups outside
// [0, MaxParallelism)), and with ErrStorage when a file is missing or has
// another size than its handle says. A failed Restore leaves no directory
// behind.
func Restore(ctx context.Context, opts Options, base string, handles []Handle) (*Backend, error) {
	b, err := newBackend(opts)
	if err != nil {
		return nil, err
	}
	if err := b.restore(ctx, base, handles); err != nil {
		_ = b.Close()
		return nil, b.wrapErr("restore: %w", err)
	}
	return b, nil
}

func (b *Backend) restore(ctx context.Context, base string, handles []Handle) error {
	parts, err := b.checkHandles(handles)
	if err != nil {
		return err
	}
	if len(parts) == 1 && parts[0].KeyGroups == b.opts.KeyGroups {
		return b.restoreWhole(ctx, base, parts[0])
	}
	return b.restoreRescaled(ctx, base, parts)
}

// checkHandles validates handles against the backend and returns those
// whose key groups intersect the backend's, in key-group order.
func (b *Backend) checkHandles(handles []Handle) ([]Handle, error) {
	var problems []string
	for i, h := range handles {
		if err := h.validate(); err != nil {
			return nil, err
		}
		if h.MaxParallelism != b.opts.MaxParallelism {
			problems = append(problems, fmt.Sprintf(
				"%v has max parallelism %d, the backend %d: the max parallelism (number of key groups) "+
					"cannot change once state has been saved; restore with max parallelism %d",
				h, h.MaxParallelism, b.opts.MaxParallelism, h.MaxParallelism))
		}
		if h.OperatorUID != b.opts.OperatorUID {
			problems = append(problems, fmt.Sprintf("%v belongs to operator %q, the backend to %q", h, h.OperatorUID, b.opts.OperatorUID))
		}
		if h.SelfContained != handles[0].SelfContained {
			problems = append(problems, "mixes checkpoint and savepoint handles, whose paths have different bases")
		}
		for _, o := range handles[:i] {
			if _, overlap := h.KeyGroups.Intersect(o.KeyGroups); overlap {
				problems = append(problems, fmt.Sprintf("key groups of %v and %v overlap", o, h))
			}
		}
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("%w: %s", ErrIncompatibleHandle, strings.Join(problems, "; "))
	}
	var parts []Handle
	for _, h := range handles {
		if _, ok := h.KeyGroups.Intersect(b.opts.KeyGroups); ok {
			parts = append(parts, h)
		}
	}
	slices.SortFunc(parts, func(x, y Handle) int { return x.KeyGroups.Start - y.KeyGroups.Start })
	return parts, nil
}

// restoreWhole restores a snapshot of exactly the backend's key groups.
func (b *Backend) restoreWhole(ctx context.Context, base string, h Handle) error {
	if err := materialize(ctx, base, h, b.dbDir); err != nil {
		return err
	}
	db, err := pebble.Open(b.dbDir, b.pebbleOptions(false))
	if err != nil {
		return fmt.Errorf("open restored %v: %w", h, err)
	}
	b.db = db
	if !h.SelfContained {
		root := base
		if !objstore.IsURL(base) {
			if root, err = filepath.Abs(base); err != nil {
				return err
			}
		}
		b.inherit = inheritedFiles{root: root, paths: make(map[string]string)}
		for _, f := range h.Files {
			if f.Shared {
				b.inherit.paths[f.Name] = f.Path
			}
		}
	}
	if _, err := cleanupExpired(b.db, b.opts.KeyGroups, b.now()); err != nil {
		return fmt.Errorf("drop expired state of %v: %w", h, err)
	}
	return nil
}

// restoreRescaled copies the intersecting key groups of each snapshot into
// a new database, Options.RestoreConcurrency snapshots at a time: each
// into sstables of its own, which are disjoint since the snapshots' key
// groups are.
func (b *Backend) restoreRescaled(ctx context.Context, base string, parts []Handle) error {
	db, err := pebble.Open(b.dbDir, b.pebbleOptions(false))
	if err != nil {
		return fmt.Errorf("open Pebble in %s: %w", b.dbDir, err)
	}
	b.db = db
	scratch := filepath.Join(b.opts.Dir, "restore")
	defer os.RemoveAll(scratch)
	now := b.now()
	metas := make([]map[string]stateMeta, len(parts))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(b.opts.RestoreConcurrency)
	for i, h := range parts {
		g.Go(func() error {
			span, _ := h.KeyGroups.Intersect(b.opts.KeyGroups)
			var w spanWriter
			if b.opts.restoreByBatch {
				w = &batchWriter{db: db}
			} else {
				w = newIngestWriter(db, b.pebbleOptions(false), filepath.Join(scratch, "ingest-"+strconv.Itoa(i)))
			}
			defer w.abort()
			dir := filepath.Join(scratch, "src-"+strconv.Itoa(i))
			m, err := b.copySnapshot(gctx, base, h, span, dir, now, w)
			if err != nil {
				return err
			}
			if err := os.RemoveAll(dir); err != nil {
				return err
			}
			if err := w.finish(gctx); err != nil {
				return fmt.Errorf("write restored state of %v: %w", h, err)
			}
			metas[i] = m
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	merged := make(map[string]stateMeta)
	for _, m := range metas {
		maps.Copy(merged, m)
	}
	batch := db.NewBatch()
	defer batch.Close()
	for _, name := range sortedKeys(merged) {
		if err := batch.Set(metaKey(name), merged[name].encode(), nil); err != nil {
			return err
		}
	}
	return batch.Commit(pebble.NoSync)
}

// copySnapshot materializes snapshot h in dir, opens it read-only and
// copies the entries of key groups span that have not expired at now into
// w. It returns the snapshot's state metas.
func (b *Backend) copySnapshot(ctx context.Context, base string, h Handle, span KeyGroupRange, dir string, now int64, w spanWriter) (map[string]stateMeta, error) {
	if err := materialize(ctx, base, h, dir); err != nil {
		return nil, err
	}
	src, err := pebble.Open(dir, b.pebbleOptions(true))
	if err != nil {
		return nil, fmt.Errorf("open %v: %w", h, err)
	}
	defer src.Close()
	metas, err := readMetas(src)
	if err != nil {
		return nil, fmt.Errorf("read %v: %w", h, err)
	}
	lower, upper := groupSpan(span)
	it, err := src.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return nil, fmt.Errorf("read %v: %w", h, err)
	}
	defer it.Close()
	var buf []byte
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		if n++; n%4096 == 0 {
			if err := context.Cause(ctx); err != nil {
				return nil, err
			}
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return nil, fmt.Errorf("read %v: %w", h, err)
		}
		pk, err := parseKey(it.Key())
		if err != nil {
			return nil, fmt.Errorf("read %v: %w", h, err)
		}
		if m, ok := metas[string(pk.name)]; ok && m.ttl.enabled {
			out, keep, changed, err := expireEntry(buf[:0], m.kind, m.ttl, now, v)
			if err != nil {
				return nil, fmt.Errorf("read %v: state %q: %w", h, pk.name, err)
			}
			if !keep {
				continue
			}
			if changed { // a list that lost some elements: out is in buf
				buf, v = out[:0], out
			}
		}
		if err := w.set(it.Key(), v); err != nil {
			return nil, err
		}
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("read %v: %w", h, err)
	}
	return metas, nil
}

// materialize links (sstables) or copies (the other files, which Pebble
// may modify) the files of snapshot h, relative to base, into dir. Each is
// opened beneath base, refusing symbolic links and escapes (package
// beneath), and linked or copied through that open file: the names come
// from a _metadata a client may have written, so no link in the snapshot
// may make the server read a file outside it.
func materialize(ctx context.Context, base string, h Handle, dir string) error {
	if objstore.IsURL(base) {
		return materializeRemote(ctx, base, h, dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	root, err := beneath.OpenRoot(base)
	if err != nil {
		return fmt.Errorf("%w: %v: %w", ErrStorage, h, err)
	}
	defer root.Close()
	for _, f := range h.Files {
		if err := context.Cause(ctx); err != nil {
			return err
		}
		if err := materializeFile(ctx, root, h, f, filepath.Join(dir, f.Name)); err != nil {
			return err
		}
	}
	return nil
}

// materializeFile links or copies the file f of h, opened beneath root,
// to dst.
func materializeFile(ctx context.Context, root *beneath.Root, h Handle, f FileRef, dst string) error {
	src := filepath.Join(root.Name(), filepath.FromSlash(f.Path))
	in, err := root.OpenFile(filepath.FromSlash(f.Path), os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %v: missing file %s", ErrStorage, h, src)
	}
	if err != nil {
		return fmt.Errorf("%w: %v: %w", ErrStorage, h, err)
	}
	defer in.Close()
	fi, err := in.Stat()
	switch {
	case err != nil:
		return fmt.Errorf("%w: %v: %w", ErrStorage, h, err)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("%w: %v: %s is not a regular file", ErrStorage, h, src)
	case fi.Size() != f.Size:
		return fmt.Errorf("%w: %v: file %s has %d bytes, the handle says %d", ErrStorage, h, src, fi.Size(), f.Size)
	}
	if immutableFile(f.Name) {
		err = beneath.LinkOpened(in, dst)
		if errors.Is(err, fs.ErrExist) {
			err = errExists
		}
	}
	if !immutableFile(f.Name) || err != nil && !errors.Is(err, errExists) {
		err = copyFrom(ctx, in, dst)
	}
	if err != nil {
		return fmt.Errorf("%w: %v: read %s: %w", ErrStorage, h, src, err)
	}
	return nil
}
