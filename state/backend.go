package state

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"

	"github.com/flinkgo/flinkgo/internal/logging"
)

// Backend holds the keyed state of one subtask of one operator: the key
// groups Options.KeyGroups, in a Pebble database under Options.Dir.
//
// A Backend is used by one goroutine (the task's): registering states,
// reading and writing them, PrepareSnapshot, CleanupExpired, Close. The one
// exception is a PendingSnapshot's Persist, which may run on another
// goroutine while the task keeps writing.
type Backend struct {
	opts     Options
	log      *slog.Logger // Options.Logger with the operator and subtask
	instance string       // random id naming the shared files of this instance
	db       *pebble.DB
	dbDir    string // Dir/db: the Pebble database
	snapDir  string // Dir/snapshots: staging of pending snapshots

	states  map[string]registration // by name
	inherit inheritedFiles          // shared files restored from a checkpoint
	snapSeq int
	// uploaded are the shared files this instance put into object storage
	// (URL -> size), which later checkpoints reference without writing
	// them again (remote.go).
	uploaded uploadedFiles

	// timerServices are the registered timer services by name: one per
	// name, since each caches its queues' earliest timers.
	timerServices map[string]*TimerService

	closed      atomic.Bool           // set first thing in Close; state calls check it
	failure     atomic.Pointer[error] // Pebble's fatal error; state calls return it
	closeCtx    context.Context
	cancelClose context.CancelCauseFunc
	persists    sync.WaitGroup // running Persist calls

	mu struct {
		sync.Mutex
		closing bool          // Close has started; no new Persist may start
		done    chan struct{} // closed when Close has finished
		err     error         // Close's result
	}
}

// registration is a state registered in this backend.
type registration struct {
	kind stateKind
	ttl  ttlPolicy
}

// inheritedFiles maps the Pebble file names of a backend restored by the
// fast path from a checkpoint to the shared files they were restored from,
// so that the next checkpoint into the same storage reuses them.
type inheritedFiles struct {
	root  string            // absolute checkpoint root they live under
	paths map[string]string // Pebble file name -> path relative to root
}

// dirMarker is the file Open writes in Dir, so that a later Open may delete
// a Dir a crashed backend left behind, and never another directory.
const dirMarker = ".flinkgo-state"

// Open returns an empty backend for opts. Its directory is created (see
// Options.Dir). Close it to free it.
func Open(opts Options) (*Backend, error) {
	b, err := newBackend(opts)
	if err != nil {
		return nil, err
	}
	if b.db, err = pebble.Open(b.dbDir, b.pebbleOptions(false)); err != nil {
		_ = os.RemoveAll(b.opts.Dir)
		return nil, fmt.Errorf("state: operator %q subtask %d: open Pebble in %s: %w",
			b.opts.OperatorUID, b.opts.Subtask, b.dbDir, err)
	}
	return b, nil
}

// newBackend validates opts, prepares Dir and returns a backend without a
// database.
func newBackend(opts Options) (*Backend, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	if err := prepareDir(opts.Dir); err != nil {
		return nil, fmt.Errorf("state: operator %q subtask %d: %w", opts.OperatorUID, opts.Subtask, err)
	}
	var id [12]byte
	_, _ = rand.Read(id[:]) // never fails (crypto/rand)
	b := &Backend{
		opts: opts,
		// Grouped: the runtime's operator logger names the subtask already.
		log:      logging.OrDiscard(opts.Logger).With(slog.Group("state", "operator", opts.OperatorUID, "subtask", opts.Subtask)),
		instance: hex.EncodeToString(id[:]),
		dbDir:    filepath.Join(opts.Dir, "db"),
		snapDir:  filepath.Join(opts.Dir, "snapshots"),
		states:   make(map[string]registration),
	}
	b.closeCtx, b.cancelClose = context.WithCancelCause(context.Background())
	return b, nil
}

// prepareDir creates dir, or empties it when a previous backend left it.
func prepareDir(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("create working directory: %w", err)
		}
	case err != nil:
		return fmt.Errorf("read working directory: %w", err)
	case len(entries) > 0:
		if _, err := os.Stat(filepath.Join(dir, dirMarker)); err != nil {
			return fmt.Errorf("%w: working directory %s is not empty and was not left by a state backend (no %s file); "+
				"give each backend its own directory", ErrInvalidOptions, dir, dirMarker)
		}
		for _, e := range entries {
			if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				return fmt.Errorf("clean working directory left by a previous backend: %w", err)
			}
		}
	}
	if err := os.WriteFile(filepath.Join(dir, dirMarker), nil, 0o644); err != nil {
		return fmt.Errorf("mark working directory: %w", err)
	}
	return nil
}

// pebbleOptions returns the options of the backend's database, or of a
// snapshot opened read-only during a restore.
func (b *Backend) pebbleOptions(readOnly bool) *pebble.Options {
	cacheSize := b.opts.CacheSize
	if readOnly { // a snapshot read once, sequentially, while restoring
		cacheSize = min(cacheSize, 4<<20)
	}
	return &pebble.Options{
		// Durability comes from checkpoints, as with Flink's RocksDB
		// backend: no WAL, and PrepareSnapshot flushes the memtable.
		DisableWAL:         true,
		ReadOnly:           readOnly,
		FormatMajorVersion: pebble.FormatNewest,
		MemTableSize:       uint64(b.opts.MemTableSize),
		CacheSize:          cacheSize,
		Logger:             pebbleLogger{b: b},
		EventListener:      b.pebbleEvents(),
		FS:                 b.opts.fs, // nil: the operating system's
		// List.Add appends with a merge: the concatenating merger.
		Merger: pebble.DefaultMerger,
	}
}

// OperatorUID returns Options.OperatorUID.
func (b *Backend) OperatorUID() string { return b.opts.OperatorUID }

// Subtask returns Options.Subtask.
func (b *Backend) Subtask() int { return b.opts.Subtask }

// MaxParallelism returns Options.MaxParallelism.
func (b *Backend) MaxParallelism() int { return b.opts.MaxParallelism }

// KeyGroups returns the key groups the backend owns.
func (b *Backend) KeyGroups() KeyGroupRange { return b.opts.KeyGroups }

// Close stops the backend: it cancels running Persist calls (they fail with
// ErrClosed) and waits for them, closes Pebble, and removes Options.Dir.
// It blocks until all that is done. It may be called more than once, also
// after errors; later calls wait for the first and return its result.
// It must not run concurrently with the task's state calls: call it from the
// task's goroutine, or after the task stopped.
func (b *Backend) Close() error {
	b.mu.Lock()
	if b.mu.closing {
		done := b.mu.done
		b.mu.Unlock()
		<-done
		return b.mu.err // written before done was closed
	}
	b.mu.closing = true
	b.mu.done = make(chan struct{})
	b.mu.Unlock()

	b.closed.Store(true)
	b.cancelClose(ErrClosed)
	b.persists.Wait()
	var errs []error
	if b.db != nil {
		if err := b.db.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close Pebble: %w", err))
		}
	}
	if err := os.RemoveAll(b.opts.Dir); err != nil {
		errs = append(errs, fmt.Errorf("remove working directory: %w", err))
	}
	var err error
	if len(errs) > 0 {
		err = fmt.Errorf("state: close operator %q subtask %d: %w", b.opts.OperatorUID, b.opts.Subtask, errors.Join(errs...))
	}
	b.mu.Lock()
	b.mu.err = err
	close(b.mu.done)
	b.mu.Unlock()
	return err
}

// checkOpen returns ErrClosed after Close, and Pebble's fatal error after
// one (ErrBackendFailed).
func (b *Backend) checkOpen() error {
	if b.closed.Load() {
		return ErrClosed
	}
	if err := b.failure.Load(); err != nil {
		return *err
	}
	return nil
}

// now returns the TTL clock in Unix milliseconds.
func (b *Backend) now() int64 { return b.opts.Clock().UnixMilli() }

// register records state name of kind with the given options, checking it
// against earlier registrations and the restored meta entry, and returns its
// TTL policy.
func (b *Backend) register(name string, kind stateKind, opts []StateOption) (ttlPolicy, error) {
	if err := b.checkOpen(); err != nil {
		return ttlPolicy{}, err
	}
	if name == "" {
		return ttlPolicy{}, fmt.Errorf("%w: empty %s state name", ErrInvalidState, kind)
	}
	var cfg stateConfig
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	ttl, err := newTTLPolicy(cfg.ttl)
	if err != nil {
		return ttlPolicy{}, fmt.Errorf("%w: %s state %q: %v", ErrInvalidState, kind, name, err)
	}
	if r, ok := b.states[name]; ok {
		if r.kind != kind {
			return ttlPolicy{}, fmt.Errorf("%w: state %q is already registered as a %s state; cannot register it as a %s state",
				ErrStateConflict, name, r.kind, kind)
		}
		if r.ttl != ttl {
			return ttlPolicy{}, fmt.Errorf("%w: %s state %q is already registered with another TTL", ErrStateConflict, kind, name)
		}
		return ttl, nil
	}
	meta := stateMeta{kind: kind, ttl: ttl}
	stored, closer, err := b.db.Get(metaKey(name))
	switch {
	case errors.Is(err, pebble.ErrNotFound):
	case err != nil:
		return ttlPolicy{}, b.wrapErr("register state %q: %w", name, err)
	default:
		old, derr := decodeMeta(stored)
		same := string(stored) == string(meta.encode())
		_ = closer.Close()
		if derr != nil {
			return ttlPolicy{}, fmt.Errorf("state: state %q: %w", name, derr)
		}
		if old.kind != kind {
			return ttlPolicy{}, fmt.Errorf("%w: state %q was restored as a %s state; cannot register it as a %s state",
				ErrStateConflict, name, old.kind, kind)
		}
		if same {
			b.states[name] = registration{kind: kind, ttl: ttl}
			return ttl, nil
		}
	}
	if err := b.db.Set(metaKey(name), meta.encode(), pebble.NoSync); err != nil {
		return ttlPolicy{}, b.wrapErr("register state %q: %w", name, err)
	}
	b.states[name] = registration{kind: kind, ttl: ttl}
	return ttl, nil
}

// wrapErr formats an error with the backend's operator and subtask.
func (b *Backend) wrapErr(format string, args ...any) error {
	return fmt.Errorf("state: operator %q subtask %d: %w", b.opts.OperatorUID, b.opts.Subtask, fmt.Errorf(format, args...))
}
