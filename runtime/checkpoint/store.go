package checkpoint

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/flinkgo/flinkgo/runtime/config"
	"github.com/flinkgo/flinkgo/state"
)

// Store holds a job's completed checkpoints across attempts.
type Store struct {
	storage  state.Storage
	retained int
	lazy     bool

	mu struct {
		sync.Mutex
		next      int64
		completed []completed // oldest first
		storageOK bool
		// registry counts the references of retained checkpoints to
		// keyed state files in shared/.
		registry *state.SharedRegistry
	}
}

type completed struct {
	meta *Metadata
	dir  string
}

func NewStore(cfg config.CheckpointConfig, jobID string) *Store {
	s := &Store{retained: cfg.Retained, lazy: cfg.CreateDirsOnFirstCheckpoint}
	if cfg.Dir != "" {
		s.storage = state.Storage{Root: joinPath(cfg.Dir, jobID)}
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
	if err := s.storage.Init(); err != nil {
		return fmt.Errorf("%w: %w", ErrDeclined, err)
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
	if s.storage.Root != "" && s.mu.storageOK {
		_ = removeAll(s.storage.Root)
	}
}

// Root is the job's checkpoint storage directory (<dir>/<job-id>, an
// s3:// URL when the storage is object storage), "" when none is
// configured.
func (s *Store) Root() string { return s.storage.Root }

// CheckpointDir is where checkpoint id's _metadata goes.
func (s *Store) CheckpointDir(id int64) string { return s.storage.CheckpointDir(id) }

// RemoveCheckpoint deletes checkpoint id's own directory.
func (s *Store) RemoveCheckpoint(id int64) error { return s.storage.RemoveCheckpoint(id) }
