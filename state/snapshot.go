package state

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/flinkgo/flinkgo/internal/fsutil"
	"github.com/flinkgo/flinkgo/internal/objstore"
)

// PendingSnapshot is a snapshot of a backend taken by PrepareSnapshot: a
// Pebble checkpoint (hard links) in a staging directory under
// Options.Dir, not yet in the checkpoint storage. Persist it or Discard it.
type PendingSnapshot struct {
	b            *Backend
	checkpointID int64
	dir          string // staging directory
	files        []snapFile

	mu struct {
		sync.Mutex
		used bool // Persist, PersistSelfContained or Discard has been called
	}
}

// snapFile is one file of a pending snapshot.
type snapFile struct {
	name string
	size int64
}

// PrepareSnapshot is the synchronous part of a checkpoint, run by the task
// between records (at the barrier): it flushes the memtable and takes a
// Pebble checkpoint, hard links to the immutable sstables and small copies
// of the rest, into a staging directory under Options.Dir. It is cheap and
// blocks only for the flush. The state may change as soon as it returns;
// the snapshot does not.
func (b *Backend) PrepareSnapshot(checkpointID int64) (*PendingSnapshot, error) {
	if err := b.checkOpen(); err != nil {
		return nil, err
	}
	if err := b.db.Flush(); err != nil {
		return nil, b.wrapErr("snapshot for checkpoint %d: flush: %w", checkpointID, err)
	}
	if err := os.MkdirAll(b.snapDir, 0o755); err != nil {
		return nil, b.wrapErr("snapshot for checkpoint %d: %w", checkpointID, err)
	}
	b.snapSeq++
	dir := filepath.Join(b.snapDir, fmt.Sprintf("chk-%d-%d", checkpointID, b.snapSeq))
	if err := b.db.Checkpoint(dir); err != nil {
		return nil, b.wrapErr("snapshot for checkpoint %d: Pebble checkpoint: %w", checkpointID, err)
	}
	if err := b.checkOpen(); err != nil { // Pebble failed fatally during the flush
		_ = os.RemoveAll(dir)
		return nil, err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, b.wrapErr("snapshot for checkpoint %d: %w", checkpointID, err)
	}
	p := &PendingSnapshot{b: b, checkpointID: checkpointID, dir: dir}
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil {
			_ = os.RemoveAll(dir)
			return nil, b.wrapErr("snapshot for checkpoint %d: %w", checkpointID, err)
		}
		if fi.Mode().IsRegular() {
			p.files = append(p.files, snapFile{name: e.Name(), size: fi.Size()})
		}
	}
	return p, nil
}

// CheckpointID returns the checkpoint the snapshot was prepared for.
func (p *PendingSnapshot) CheckpointID() int64 { return p.checkpointID }

// StateSize returns the size in bytes of the snapshot's files.
func (p *PendingSnapshot) StateSize() int64 {
	var n int64
	for _, f := range p.files {
		n += f.size
	}
	return n
}

// Persist is the asynchronous part of a checkpoint; it may run on another
// goroutine while the task keeps using the backend. It writes the snapshot
// into st, as Flink's incremental RocksDB checkpoints:
//
//   - every sstable goes to shared/ under a name unique to this backend
//     instance and file; sstables never change, so a name that exists
//     already holds the same bytes and is reused without writing anything
//     (that is what makes checkpoints incremental);
//   - the other files (MANIFEST, OPTIONS, markers) go to
//     chk-<n>/<uid>-<subtask>/.
//
// Files are hard-linked when st is on the same filesystem as Options.Dir
// (and not st.CopyFiles), else copied (temporary name, fsync, rename). st
// must have been initialized (Storage.Init). Persist honors ctx; when the
// backend is closed meanwhile it fails with ErrClosed. Whatever the outcome
// it removes the staging directory; on failure it also removes the private
// files it wrote (shared files are left to SharedRegistry.Sweep, as another
// snapshot may already reuse them). It may be called once per snapshot.
func (p *PendingSnapshot) Persist(ctx context.Context, st Storage) (Handle, error) {
	if err := p.begin(); err != nil {
		return Handle{}, err
	}
	defer p.end()
	ctx, cancel := p.b.persistContext(ctx)
	defer cancel()
	h, err := p.persist(ctx, st)
	if err != nil {
		return Handle{}, p.b.wrapErr("persist checkpoint %d into %s: %w", p.checkpointID, st.Root, err)
	}
	return h, nil
}

func (p *PendingSnapshot) persist(ctx context.Context, st Storage) (Handle, error) {
	if st.Remote() {
		return p.persistRemote(ctx, st)
	}
	if fi, err := os.Stat(st.SharedDir()); err != nil || !fi.IsDir() {
		if err == nil {
			err = fmt.Errorf("%s is not a directory", st.SharedDir())
		}
		return Handle{}, fmt.Errorf("%w: shared directory missing (call Storage.Init first): %w", ErrStorage, err)
	}
	root, err := filepath.Abs(st.Root)
	if err != nil {
		return Handle{}, fmt.Errorf("%w: %w", ErrStorage, err)
	}
	chkDir := st.CheckpointDir(p.checkpointID)
	sub := p.b.subdirName()
	privDir := filepath.Join(chkDir, sub)
	privRel := path.Join("chk-"+strconv.FormatInt(p.checkpointID, 10), sub)
	if err := os.Mkdir(chkDir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return Handle{}, fmt.Errorf("%w: create %s: %s", ErrStorage, chkDir, explainMkdir(chkDir, err))
	}
	if err := os.RemoveAll(privDir); err != nil { // left by an earlier attempt
		return Handle{}, fmt.Errorf("%w: %w", ErrStorage, err)
	}
	if err := os.Mkdir(privDir, 0o755); err != nil {
		return Handle{}, fmt.Errorf("%w: create %s: %s", ErrStorage, privDir, explainMkdir(privDir, err))
	}
	h, err := p.writeFiles(ctx, st, root, privDir, privRel)
	if err == nil {
		err = errors.Join(fsutil.SyncDir(st.SharedDir()), fsutil.SyncDir(privDir), fsutil.SyncDir(chkDir))
	}
	if err != nil {
		_ = os.RemoveAll(privDir)
		if cause := context.Cause(ctx); cause != nil && !errors.Is(err, cause) {
			err = fmt.Errorf("%w (%w)", cause, err)
		}
		return Handle{}, err
	}
	return h, nil
}

// writeFiles links or copies the snapshot's files into st and returns the
// handle describing them.
func (p *PendingSnapshot) writeFiles(ctx context.Context, st Storage, root, privDir, privRel string) (Handle, error) {
	h := p.handle(false)
	inherit := p.b.inherit
	if inherit.root != root {
		inherit.paths = nil // restored from another storage: upload anew
	}
	for _, f := range p.files {
		if err := context.Cause(ctx); err != nil {
			return Handle{}, err
		}
		src := filepath.Join(p.dir, f.name)
		h.StateSize += f.size
		if !immutableFile(f.name) {
			if err := linkOrCopy(ctx, src, filepath.Join(privDir, f.name), st.CopyFiles); err != nil {
				return Handle{}, fmt.Errorf("%w: write %s: %w", ErrStorage, filepath.Join(privDir, f.name), err)
			}
			h.BytesWritten += f.size
			h.Files = append(h.Files, FileRef{Name: f.name, Path: path.Join(privRel, f.name), Size: f.size})
			continue
		}
		rel, written, err := p.writeShared(ctx, st, root, inherit.paths[f.name], f)
		if err != nil {
			return Handle{}, err
		}
		h.BytesWritten += written
		h.Files = append(h.Files, FileRef{Name: f.name, Path: rel, Size: f.size, Shared: true})
	}
	return h, nil
}

// writeShared puts sstable f into shared/, reusing the file inherited from
// a restore (inherited, when not empty) or one an earlier snapshot wrote,
// and returns its path relative to the root and the bytes written.
func (p *PendingSnapshot) writeShared(ctx context.Context, st Storage, root, inherited string, f snapFile) (string, int64, error) {
	if inherited != "" {
		if fi, err := os.Stat(filepath.Join(root, filepath.FromSlash(inherited))); err == nil && fi.Size() == f.size {
			return inherited, 0, nil
		}
	}
	rel := sharedPrefix + p.b.sharedName(f.name)
	dst := filepath.Join(st.Root, filepath.FromSlash(rel))
	err := linkOrCopy(ctx, filepath.Join(p.dir, f.name), dst, st.CopyFiles)
	switch {
	case err == nil:
		return rel, f.size, nil
	case errors.Is(err, errExists):
		fi, err := os.Stat(dst)
		if err != nil {
			return "", 0, fmt.Errorf("%w: %w", ErrStorage, err)
		}
		if fi.Size() != f.size {
			return "", 0, fmt.Errorf("%w: shared file %s exists with %d bytes, but the sstable it names has %d",
				ErrStorage, dst, fi.Size(), f.size)
		}
		return rel, 0, nil
	default:
		return "", 0, fmt.Errorf("%w: write %s: %w", ErrStorage, dst, err)
	}
}

// PersistSelfContained writes the snapshot as a self-contained savepoint:
// every file goes under dir/<uid>-<subtask>/ (hard-linked when possible,
// else copied), and the handle's paths are relative to dir, so that the
// savepoint directory may be moved or copied elsewhere; restore it with
// Restore(ctx, opts, dir, handles). Several backends may write into the same
// dir. Like Persist it honors ctx, removes the staging directory and may be
// called once per snapshot.
func (p *PendingSnapshot) PersistSelfContained(ctx context.Context, dir string) (Handle, error) {
	if err := p.begin(); err != nil {
		return Handle{}, err
	}
	defer p.end()
	ctx, cancel := p.b.persistContext(ctx)
	defer cancel()
	h, err := p.persistSelfContained(ctx, dir)
	if err != nil {
		return Handle{}, p.b.wrapErr("persist savepoint into %s: %w", dir, err)
	}
	return h, nil
}

func (p *PendingSnapshot) persistSelfContained(ctx context.Context, dir string) (Handle, error) {
	if objstore.IsURL(dir) {
		return p.persistSelfContainedRemote(ctx, dir)
	}
	sub := p.b.subdirName()
	target := filepath.Join(dir, sub)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Handle{}, fmt.Errorf("%w: create %s: %s", ErrStorage, dir, explainMkdir(dir, err))
	}
	if err := os.RemoveAll(target); err != nil {
		return Handle{}, fmt.Errorf("%w: %w", ErrStorage, err)
	}
	if err := os.Mkdir(target, 0o755); err != nil {
		return Handle{}, fmt.Errorf("%w: create %s: %s", ErrStorage, target, explainMkdir(target, err))
	}
	h := p.handle(true)
	err := func() error {
		for _, f := range p.files {
			if err := context.Cause(ctx); err != nil {
				return err
			}
			dst := filepath.Join(target, f.name)
			if err := linkOrCopy(ctx, filepath.Join(p.dir, f.name), dst, false); err != nil {
				return fmt.Errorf("%w: write %s: %w", ErrStorage, dst, err)
			}
			h.StateSize += f.size
			h.BytesWritten += f.size
			h.Files = append(h.Files, FileRef{Name: f.name, Path: path.Join(sub, f.name), Size: f.size})
		}
		return errors.Join(fsutil.SyncDir(target), fsutil.SyncDir(dir))
	}()
	if err != nil {
		_ = os.RemoveAll(target)
		if cause := context.Cause(ctx); cause != nil && !errors.Is(err, cause) {
			err = fmt.Errorf("%w (%w)", cause, err)
		}
		return Handle{}, err
	}
	return h, nil
}

// Discard drops the snapshot: it removes the staging directory. It may be
// called more than once, and after Persist (then it does nothing).
func (p *PendingSnapshot) Discard() error {
	p.mu.Lock()
	used := p.mu.used
	p.mu.used = true
	p.mu.Unlock()
	if used {
		return nil
	}
	if err := os.RemoveAll(p.dir); err != nil {
		return p.b.wrapErr("discard snapshot for checkpoint %d: %w", p.checkpointID, err)
	}
	return nil
}

// begin marks the snapshot used and counts a running persist, which Close
// waits for; it fails after Close or a first use.
func (p *PendingSnapshot) begin() error {
	p.mu.Lock()
	used := p.mu.used
	p.mu.used = true
	p.mu.Unlock()
	if used {
		return ErrSnapshotUsed
	}
	p.b.mu.Lock()
	defer p.b.mu.Unlock()
	if p.b.mu.closing {
		return ErrClosed
	}
	p.b.persists.Add(1)
	return nil
}

// end removes the staging directory and uncounts the persist.
func (p *PendingSnapshot) end() {
	_ = os.RemoveAll(p.dir)
	p.b.persists.Done()
}

// handle returns the handle of the snapshot without files.
func (p *PendingSnapshot) handle(selfContained bool) Handle {
	return Handle{
		OperatorUID:    p.b.opts.OperatorUID,
		Subtask:        p.b.opts.Subtask,
		MaxParallelism: p.b.opts.MaxParallelism,
		KeyGroups:      p.b.opts.KeyGroups,
		CheckpointID:   p.checkpointID,
		SelfContained:  selfContained,
	}
}

// persistContext returns ctx, also canceled with ErrClosed when the backend
// closes.
func (b *Backend) persistContext(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(b.closeCtx, func() { cancel(ErrClosed) })
	return ctx, func() {
		stop()
		cancel(nil)
	}
}

// subdirName is the directory of the backend's private files in a
// checkpoint or savepoint: <uid>-<subtask>.
func (b *Backend) subdirName() string {
	return safeName(b.opts.OperatorUID) + "-" + strconv.Itoa(b.opts.Subtask)
}

// sharedName is the name in shared/ of the backend's Pebble file name:
// <uid>-<subtask>-<instance>-<name>, unique to this backend instance and
// file, since Pebble never reuses a file number.
func (b *Backend) sharedName(name string) string {
	return b.subdirName() + "-" + b.instance + "-" + name
}
