package sink

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/flinkgo/flinkgo/internal/beneath"
	"github.com/flinkgo/flinkgo/internal/fsutil"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
	"github.com/flinkgo/flinkgo/runtime/rowkind"
)

// fileWriter writes one file sink subtask's parts and takes each through
// in-progress, pending and published (see the package doc).
type fileWriter struct {
	dir, ext string
	// work names dir for the file operations: dir opened from the allowed
	// directory it lies under and kept open (see beneath.Dir), so that a
	// swap of dir for a link after the open does not move the parts.
	// Committables name the parts under dir, which outlives the process.
	pin     *beneath.Dir
	work    string
	format  planpb.FileSource_Format
	schema  *arrow.Schema
	id      string // the <id> of part names
	subtask int
	mode    planpb.FileSink_Mode

	mu struct {
		sync.Mutex
		counter int64         // number of the next part
		cur     *part         // the in-progress part; nil until a row comes
		pending []pendingPart // precommitted, not committed, in checkpoint order
		oneFile bool          // no checkpoint yet: Close publishes part-<subtask>.<ext>
		done    bool          // Close or Abort ran
		err     error         // the failure that made the writer unusable
	}
}

// part is an in-progress part file.
type part struct {
	name string // published name
	path string // in-progress path
	f    *os.File
	buf  *bufio.Writer
	enc  encoder
}

type pendingPart struct {
	checkpoint int64
	c          Committable
}

func openFile(s *planpb.FileSink, cfg Config) (Writer, error) {
	if s.GetChangelog() {
		schema, err := changelogSchema(cfg.Schema)
		if err != nil {
			return nil, fmt.Errorf("sink: %s: %w", s.GetPath(), err)
		}
		cfg.Schema = schema
		w, err := openFileWriter(s, cfg)
		if err != nil {
			return nil, err
		}
		return &changelogWriter{Writer: w, schema: schema}, nil
	}
	if rowkind.Has(cfg.Schema) {
		return nil, fmt.Errorf("sink: %s: the rows are a changelog (they carry row kinds): write them with changelog set", s.GetPath())
	}
	return openFileWriter(s, cfg)
}

func openFileWriter(s *planpb.FileSink, cfg Config) (Writer, error) {
	ext := extension(s.GetFormat())
	if ext == "" {
		return nil, fmt.Errorf("sink: unknown file format %s", s.GetFormat())
	}
	// Parts are opened by rows; report a schema Parquet cannot hold now.
	if s.GetFormat() == planpb.FileSource_PARQUET {
		if _, err := pqarrow.ToParquet(cfg.Schema, nil, pqarrow.DefaultWriterProps()); err != nil {
			return nil, fmt.Errorf("sink: %s: %w", s.GetPath(), err)
		}
	}
	pin, err := beneath.OpenDir(cfg.Paths, "the file sink's directory", s.GetPath(), true)
	if err != nil {
		return nil, fmt.Errorf("sink: %w", err)
	}
	w := &fileWriter{
		dir: s.GetPath(), pin: pin, work: pin.Path(), ext: ext, format: s.GetFormat(), schema: cfg.Schema,
		id: cfg.AttemptID, subtask: cfg.Subtask, mode: s.GetMode(),
	}
	if w.id == "" {
		w.id = randomID()
	}
	w.mu.oneFile = cfg.AttemptID == "" && !cfg.Restoring
	if cfg.Restoring {
		st, err := DecodeState(cfg.Restore)
		if err != nil {
			pin.Close()
			return nil, err
		}
		w.mu.counter = st.Counter
	}
	return w, nil
}

// randomID is 16 hex digits from crypto/rand (whose Read never fails).
func randomID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Write blocks on file I/O. After Close or Abort it returns ErrClosed;
// after a failure, that failure.
func (w *fileWriter) Write(b arrow.RecordBatch) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usableLocked(); err != nil {
		return err
	}
	if b.NumRows() == 0 {
		return nil
	}
	if w.mu.cur == nil {
		if err := w.openPartLocked(); err != nil {
			return w.failLocked(fmt.Errorf("sink: %s: %w", w.dir, err))
		}
	}
	if err := w.mu.cur.enc.write(b); err != nil {
		return w.failLocked(fmt.Errorf("sink: %s: %w", w.pin.Logical(w.mu.cur.path), err))
	}
	return nil
}

// PreCommit finishes the current part and moves it to its pending name
// under checkpointID. It blocks on the file's and the directory's fsyncs.
func (w *fileWriter) PreCommit(checkpointID int64) ([]byte, error) {
	st, err := w.preCommit(checkpointID)
	if err != nil {
		return nil, err
	}
	return json.Marshal(st)
}

func (w *fileWriter) preCommit(checkpointID int64) (SinkState, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usableLocked(); err != nil {
		return SinkState{}, err
	}
	w.mu.oneFile = false
	if p := w.mu.cur; p != nil {
		w.mu.cur = nil
		c := Committable{Pending: filepath.Join(w.dir, pendingName(p.name)), Final: filepath.Join(w.dir, p.name)}
		err := p.finish()
		if err == nil {
			if err = os.Rename(p.path, filepath.Join(w.work, pendingName(p.name))); err != nil {
				_ = os.Remove(p.path)
			}
		}
		if err == nil {
			// The checkpoint names the pending file: it must survive a crash.
			// If the sync fails, Recover removes the unnamed pending file.
			err = fsutil.SyncDir(w.work)
		}
		if err != nil {
			return SinkState{}, w.failLocked(fmt.Errorf("sink: precommit %d: %s: %w", checkpointID, w.pin.Logical(p.path), err))
		}
		w.mu.pending = append(w.mu.pending, pendingPart{checkpoint: checkpointID, c: c})
	}
	st := SinkState{Pending: make([]Committable, len(w.mu.pending)), Counter: w.mu.counter}
	for i, p := range w.mu.pending {
		st.Pending[i] = p.c
	}
	return st, nil
}

// Commit publishes the parts of checkpoints <= checkpointID. It blocks on
// renames and a directory fsync.
func (w *fileWriter) Commit(checkpointID int64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.publishLocked(checkpointID, false); err != nil {
		return fmt.Errorf("sink: commit %d: %w", checkpointID, err)
	}
	return nil
}

// publishLocked renames the pending parts of checkpoints <= upTo to their
// final names and syncs the directory if it renamed one (or if force). A
// part stays pending until its rename is durable, so it stays in the next
// checkpoint's state and a crash before the sync cannot orphan it.
func (w *fileWriter) publishLocked(upTo int64, force bool) error {
	var errs []error
	var left, done []pendingPart
	for _, p := range w.mu.pending {
		if p.checkpoint > upTo {
			left = append(left, p)
			continue
		}
		if err := commit(w.working(p.c)); err != nil {
			errs = append(errs, err)
			left = append(left, p)
			continue
		}
		done = append(done, p)
	}
	if len(done) > 0 || force {
		if err := fsutil.SyncDir(w.work); err != nil {
			errs = append(errs, err)
			left = append(left, done...)
		}
	}
	w.mu.pending = left
	return errors.Join(errs...)
}

// Close publishes the current part and every pending part. It blocks on
// fsyncs. A second call returns nil.
func (w *fileWriter) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.mu.done {
		return nil
	}
	w.mu.done = true
	defer w.unpinLocked()
	if w.mu.err != nil {
		return w.mu.err
	}
	if w.mu.cur == nil && w.mu.oneFile {
		// The one file is published even empty, as before checkpoints.
		if err := w.openPartLocked(); err != nil {
			return w.failLocked(fmt.Errorf("sink: %s: %w", w.dir, err))
		}
	}
	if p := w.mu.cur; p != nil {
		w.mu.cur = nil
		final := p.name
		if w.mu.oneFile {
			final = oneFileName(w.mode, w.id, w.subtask, w.ext)
		}
		err := p.finish()
		if err == nil {
			if err = os.Rename(p.path, filepath.Join(w.work, final)); err != nil {
				_ = os.Remove(p.path)
			}
		}
		if err != nil {
			// Pending parts stay for Commit or Recover.
			return w.failLocked(fmt.Errorf("sink: %s: %w", w.pin.Logical(p.path), err))
		}
	}
	if err := w.publishLocked(math.MaxInt64, true); err != nil {
		return fmt.Errorf("sink: close: %w", err)
	}
	return nil
}

// Abort removes the in-progress part. Pending parts stay.
func (w *fileWriter) Abort() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.mu.done {
		return
	}
	w.mu.done = true
	if w.mu.cur != nil {
		w.mu.cur.drop()
		w.mu.cur = nil
	}
	w.unpinLocked()
}

// unpinLocked closes the directory w worked in once w is done. What is left
// pending (a failed Close) is published later by name: by Commit, or by
// Recover in the next attempt.
func (w *fileWriter) unpinLocked() {
	_ = w.pin.Close()
	w.work = w.dir
}

func (w *fileWriter) usableLocked() error {
	if w.mu.err != nil {
		return w.mu.err
	}
	if w.mu.done {
		return ErrClosed
	}
	return nil
}

// failLocked makes err the writer's failure and drops the in-progress part.
func (w *fileWriter) failLocked(err error) error {
	if w.mu.cur != nil {
		w.mu.cur.drop()
		w.mu.cur = nil
	}
	w.mu.err = err
	return err
}

// openPartLocked opens the next part. It skips every number whose part
// exists under any of its names, so a reused attempt id overwrites nothing.
func (w *fileWriter) openPartLocked() error {
	for {
		name := partName(w.id, w.subtask, w.mu.counter, w.ext)
		w.mu.counter++
		if exists(filepath.Join(w.work, name)) || exists(filepath.Join(w.work, pendingName(name))) {
			continue
		}
		path := filepath.Join(w.work, inProgressName(name))
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return err
		}
		p := &part{name: name, path: path, f: f, buf: bufio.NewWriterSize(f, 1<<20)}
		if p.enc, err = newEncoder(w.format, w.schema, p.buf); err != nil {
			p.drop()
			return err
		}
		w.mu.cur = p
		return nil
	}
}

// working names c's files under w.work, where w renames them.
func (w *fileWriter) working(c Committable) Committable {
	return Committable{Pending: filepath.Join(w.work, filepath.Base(c.Pending)), Final: filepath.Join(w.work, filepath.Base(c.Final))}
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// finish completes the part's file, fsyncs and closes it; on failure it
// removes the file.
func (p *part) finish() error {
	err := errors.Join(p.enc.finish(), p.buf.Flush(), p.f.Sync())
	if cerr := p.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(p.path)
	}
	return err
}

// drop closes and removes the part's file.
func (p *part) drop() {
	_ = p.f.Close()
	_ = os.Remove(p.path)
}
