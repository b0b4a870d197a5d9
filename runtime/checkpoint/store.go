package checkpoint

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"

	"github.com/flinkgo/flinkgo/internal/beneath"
	"github.com/flinkgo/flinkgo/runtime/config"
	"github.com/flinkgo/flinkgo/state"
)

// Store holds a job's completed checkpoints across attempts.
type Store struct {
	storage  state.Storage
	retained int
	lazy     bool
	// paths opens the local storage root beneath the allowed directory
	// it lies under (nil: by name); see Open.
	paths beneath.Paths
	// name is the storage root as the user named it (<dir>/<job-id>);
	// storage.Root is where the work goes, the same path or, once the
	// root is pinned, /proc/self/fd/N of pin (see beneath.Dir).
	name string

	mu struct {
		sync.Mutex
		next int64
		// pin is the storage root opened beneath its allowed directory,
		// parent the checkpoint directory it was opened from (nil when
		// the root is worked in by name).
		pin, parent *beneath.Dir
		completed   []completed // oldest first
		storageOK   bool
		// registry counts the references of retained checkpoints to
		// keyed state files in shared/.
		registry *state.SharedRegistry
	}
}

type completed struct {
	meta *Metadata
	dir  string
}

// NewStore is the store of job jobID's checkpoints under cfg.Dir. paths
// opens a local storage root beneath the allowed directory it lies under
// (nil: by name, for a runtime that allows any path): EnsureStorage opens
// <dir>/<job-id> so, refusing a symbolic link on the way, and keeps it
// open until Close; every checkpoint file is then created, read, renamed
// and deleted through that descriptor, so a directory swapped for a link
// after the check at submission cannot redirect checkpoint writes. The
// directories below the root are the runtime's own (0755), which no other
// user can swap.
func NewStore(cfg config.CheckpointConfig, jobID string, paths beneath.Paths) *Store {
	s := &Store{retained: cfg.Retained, lazy: cfg.CreateDirsOnFirstCheckpoint, paths: paths}
	if cfg.Dir != "" {
		s.name = joinPath(cfg.Dir, jobID)
		s.storage = state.Storage{Root: s.name}
	}
	s.mu.next = 1
	return s
}

func (s *Store) NextID() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.mu.next
	s.mu.next++
	return id
}

// ContinueAfter makes checkpoint ids continue after a restored one's.
func (s *Store) ContinueAfter(id int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.next = max(s.mu.next, id+1)
}

// EnsureStorage creates the storage directories once.
func (s *Store) EnsureStorage() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.storageOK {
		return nil
	}
	if s.storage.Root == "" {
		return fmt.Errorf("%w: no checkpoint storage: set %s", ErrDeclined, config.ConfigCheckpointDir)
	}
	if s.paths != nil && !s.storage.Remote() && s.mu.pin == nil {
		parent, err := s.paths.Dir("the checkpoint directory", filepath.Dir(s.name), true)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrDeclined, err)
		}
		pin, err := parent.Sub(filepath.Base(s.name), true)
		if err != nil {
			_ = parent.Close()
			return fmt.Errorf("%w: the checkpoint directory: %w", ErrDeclined, err)
		}
		s.mu.pin, s.mu.parent = pin, parent
		s.storage.Root = pin.Path()
	}
	if err := s.storage.Init(); err != nil {
		return fmt.Errorf("%w: %w", ErrDeclined, s.showNamesLocked(err))
	}
	s.mu.storageOK = true
	s.mu.registry = state.NewSharedRegistry(s.storage)
	return nil
}

// Add makes m the latest completed checkpoint and removes the oldest
// beyond the retained number, with the shared files only they used.
func (s *Store) Add(m *Metadata, dir string) error {
	handles, err := KeyedHandles(m)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// Register before releasing: files the new checkpoint shares with a
	// subsumed one stay.
	if err := s.mu.registry.Register(m.CheckpointID, handles); err != nil {
		return err
	}
	s.mu.completed = append(s.mu.completed, completed{meta: m, dir: dir})
	if extra := len(s.mu.completed) - s.retained; extra > 0 {
		for _, c := range s.mu.completed[:extra] {
			_ = s.mu.registry.Release(c.meta.CheckpointID)
			_ = s.storage.RemoveCheckpoint(c.meta.CheckpointID)
		}
		s.mu.completed = append([]completed(nil), s.mu.completed[extra:]...)
	}
	return nil
}

// Sweep deletes the shared files no retained checkpoint references (those
// of checkpoints that never completed). Only while no task runs.
func (s *Store) Sweep() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.registry != nil {
		_ = s.mu.registry.Sweep()
		if s.storage.Remote() {
			_ = s.sweepCheckpointsLocked()
		}
	}
}

// sweepCheckpointsLocked deletes the chk-<n>/ objects of checkpoints that
// are not retained, on object storage: those of failed checkpoints whose
// deletion failed too (the store was unreachable), which nothing else
// would find again.
func (s *Store) sweepCheckpointsLocked() error {
	objs, err := listObjects(s.storage.Root + "/chk-")
	if err != nil {
		return err
	}
	retained := map[string]bool{}
	for _, c := range s.mu.completed {
		retained[s.storage.CheckpointDir(c.meta.CheckpointID)] = true
	}
	var stale []string
	for _, o := range objs {
		chk, _, _ := strings.Cut(strings.TrimPrefix(o.URL, s.storage.Root+"/"), "/")
		if !retained[s.storage.Root+"/"+chk] {
			stale = append(stale, o.URL)
		}
	}
	return deleteObjects(stale)
}

// KeyedHandles collects the keyed state handles of a snapshot.
func KeyedHandles(m *Metadata) ([]state.Handle, error) {
	var hs []state.Handle
	for _, op := range m.Operators {
		for _, st := range op.Subtasks {
			if st.Keyed == nil {
				continue
			}
			var h state.Handle
			if err := json.Unmarshal(st.Keyed, &h); err != nil {
				return nil, fmt.Errorf("operator %q subtask %d: invalid keyed state handle: %w", op.UID, st.Subtask, err)
			}
			hs = append(hs, h)
		}
	}
	return hs, nil
}

// Latest returns the latest completed checkpoint, if any.
func (s *Store) Latest() (*Metadata, string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.mu.completed) == 0 {
		return nil, "", false
	}
	c := s.mu.completed[len(s.mu.completed)-1]
	return c.meta, c.dir, true
}

// DiscardAll deletes the job's checkpoint storage (a finished job, or a
// canceled one without RetainOnCancel).
func (s *Store) DiscardAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.completed = nil
	if s.storage.Root == "" || !s.mu.storageOK {
		return
	}
	if s.mu.parent != nil {
		// The root's own entry goes from its pinned parent, by the
		// job id: never by a name that a swapped link could redirect.
		_ = removeAll(filepath.Join(s.mu.parent.Path(), filepath.Base(s.name)))
		return
	}
	_ = removeAll(s.storage.Root)
}

// Root is the job's checkpoint storage directory as the user named it
// (<dir>/<job-id>, an s3:// URL when the storage is object storage), ""
// when none is configured. Work inside it goes through WorkRoot.
func (s *Store) Root() string { return s.name }

// WorkRoot is where the job's checkpoint files are written and read: Root,
// or once EnsureStorage pinned it, the path through its open descriptor.
// Never shown to users: ShowNames turns it back into Root.
func (s *Store) WorkRoot() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.storage.Root
}

// CheckpointDir is where checkpoint id's _metadata goes (under WorkRoot).
func (s *Store) CheckpointDir(id int64) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.storage.CheckpointDir(id)
}

// ShowNames turns WorkRoot back into Root in err's message.
func (s *Store) ShowNames(err error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.showNamesLocked(err)
}

func (s *Store) showNamesLocked(err error) error { return s.mu.pin.ShowNames(err) }

// Shown is p, a path under WorkRoot, as the user names it (under Root).
func (s *Store) Shown(p string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.pin == nil {
		return p
	}
	return s.mu.pin.Logical(p)
}

// Close releases the pinned storage root; the store is unusable after.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := errors.Join(s.mu.pin.Close(), s.mu.parent.Close())
	s.mu.pin, s.mu.parent = nil, nil
	return err
}

// RemoveCheckpoint deletes checkpoint id's own directory.
func (s *Store) RemoveCheckpoint(id int64) error {
	s.mu.Lock()
	st := s.storage
	s.mu.Unlock()
	return s.ShowNames(st.RemoveCheckpoint(id))
}
