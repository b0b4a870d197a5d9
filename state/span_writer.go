package state

import (
	"context"
	"os"
	"path/filepath"
	"strconv"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// spanWriter receives the entries a rescaling restore copies, in increasing
// key order, and puts them into the new database.
type spanWriter interface {
	set(key, value []byte) error
	// finish makes every entry set visible in the database.
	finish(ctx context.Context) error
	// abort releases what finish did not (files, batches); it may follow
	// finish.
	abort()
}

// ingestTableSize is the size at which ingestWriter starts a new sstable:
// large enough for few files, small enough that a later compaction that
// overlaps one does not rewrite much.
const ingestTableSize = 32 << 20

// ingestWriter writes the entries into sstables in a scratch directory and
// ingests them at the end: no memtable, no WAL, no compaction; the tables
// land in the last level. It relies on the entries coming in increasing key
// order, which copying disjoint key-group spans in key-group order gives.
type ingestWriter struct {
	db    *pebble.DB
	wopts sstable.WriterOptions
	dir   string
	w     *sstable.Writer
	paths []string // finished sstables
}

func newIngestWriter(db *pebble.DB, opts *pebble.Options, dir string) *ingestWriter {
	opts.EnsureDefaults()
	return &ingestWriter{db: db, wopts: opts.MakeWriterOptions(0, db.TableFormat()), dir: dir}
}

func (w *ingestWriter) set(key, value []byte) error {
	if w.w == nil {
		if err := os.MkdirAll(w.dir, 0o755); err != nil {
			return err
		}
		path := filepath.Join(w.dir, "ingest-"+strconv.Itoa(len(w.paths))+".sst")
		f, err := vfs.Default.Create(path, vfs.WriteCategoryUnspecified)
		if err != nil {
			return err
		}
		w.paths = append(w.paths, path)
		w.w = sstable.NewWriter(objstorageprovider.NewFileWritable(f), w.wopts)
	}
	if err := w.w.Set(key, value); err != nil {
		return err
	}
	if w.w.Raw().EstimatedSize() >= ingestTableSize {
		return w.closeTable()
	}
	return nil
}

func (w *ingestWriter) closeTable() error {
	err := w.w.Close() // closes the file too
	w.w = nil
	return err
}

func (w *ingestWriter) finish(ctx context.Context) error {
	if w.w != nil {
		if err := w.closeTable(); err != nil {
			return err
		}
	}
	if len(w.paths) == 0 {
		return nil
	}
	if err := w.db.Ingest(ctx, w.paths); err != nil {
		return err
	}
	w.removeFiles()
	return nil
}

func (w *ingestWriter) abort() {
	if w.w != nil {
		_ = w.w.Close()
		w.w = nil
	}
	w.removeFiles()
}

func (w *ingestWriter) removeFiles() {
	for _, p := range w.paths {
		_ = os.Remove(p)
	}
	w.paths = nil
}

// batchBytes is the size at which batchWriter commits.
const batchBytes = 4 << 20

// batchWriter writes the entries with batched writes (memtable, flushes,
// compactions); kept to compare with ingestWriter in benchmarks.
type batchWriter struct {
	db    *pebble.DB
	batch *pebble.Batch
}

func (w *batchWriter) set(key, value []byte) error {
	if w.batch == nil {
		w.batch = w.db.NewBatch()
	}
	if err := w.batch.Set(key, value, nil); err != nil {
		return err
	}
	if w.batch.Len() >= batchBytes {
		return w.commit()
	}
	return nil
}

func (w *batchWriter) commit() error {
	err := w.batch.Commit(pebble.NoSync)
	_ = w.batch.Close()
	w.batch = nil
	return err
}

func (w *batchWriter) finish(context.Context) error {
	if w.batch == nil {
		return nil
	}
	return w.commit()
}

func (w *batchWriter) abort() {
	if w.batch != nil {
		_ = w.batch.Close()
		w.batch = nil
	}
}
