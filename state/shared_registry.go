package state

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// SharedRegistry counts the references of completed checkpoints to the
// files in a Storage's shared/ directory and deletes the files no
// registered checkpoint references any more, as Flink's
// SharedStateRegistry. The checkpoint coordinator owns one per job; it is
// safe for concurrent use.
//
// Protocol: Register a checkpoint when it completes, before releasing the
// checkpoints it subsumes; Release a checkpoint when it is subsumed
// (num-retained) or discarded. A pending checkpoint only reuses shared
// files that a completed, not yet subsumed checkpoint also references
// (checkpoints complete in order, and one completing aborts the pending
// ones before it), so Release never deletes a file a pending checkpoint
// needs. Sweep deletes what no registered checkpoint references, including
// uploads of aborted checkpoints; call it only when no Persist into the
// storage is running (after a failover, at job end), or it may delete the
// files of a checkpoint in flight.
type SharedRegistry struct {
	st Storage
	mu struct {
		sync.Mutex
		checkpoints map[int64]map[string]struct{} // checkpoint -> shared paths
		refs        map[string]int                // shared path -> checkpoints referencing it
	}
}

// NewSharedRegistry returns an empty registry of st's shared files.
func NewSharedRegistry(st Storage) *SharedRegistry {
	r := &SharedRegistry{st: st}
	r.mu.checkpoints = make(map[int64]map[string]struct{})
	r.mu.refs = make(map[string]int)
	return r
}

// Register records that completed checkpoint checkpointID references the
// shared files of handles. It may be called more than once for one
// checkpoint (for instance once per operator): the references add up.
// Handles of savepoints reference no shared file. It fails, registering
// nothing, when a handle names a shared file outside shared/.
func (r *SharedRegistry) Register(checkpointID int64, handles []Handle) error {
	var paths []string
	for _, h := range handles {
		for _, p := range h.SharedFiles() {
			if !validSharedPath(p) {
				return fmt.Errorf("%w: register checkpoint %d: %v: shared path %q is not shared/<name>",
					ErrIncompatibleHandle, checkpointID, h, p)
			}
			paths = append(paths, p)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.registerLocked(checkpointID, paths)
	return nil
}

func (r *SharedRegistry) registerLocked(checkpointID int64, paths []string) {
	set, ok := r.mu.checkpoints[checkpointID]
	if !ok {
		set = make(map[string]struct{}, len(paths))
		r.mu.checkpoints[checkpointID] = set
	}
	for _, p := range paths {
		if _, dup := set[p]; dup {
			continue
		}
		set[p] = struct{}{}
		r.mu.refs[p]++
	}
}

// Release forgets checkpoint checkpointID and deletes every shared file it
// referenced that no other registered checkpoint references. Releasing an
// unknown checkpoint does nothing. Its error names the files it could not
// delete; they stay counted as unreferenced, for Sweep.
func (r *SharedRegistry) Release(checkpointID int64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	set, ok := r.mu.checkpoints[checkpointID]
	if !ok {
		return nil
	}
	delete(r.mu.checkpoints, checkpointID)
	var errs []error
	var unreferenced []string
	for _, p := range sortedKeys(set) {
		r.mu.refs[p]--
		if r.mu.refs[p] > 0 {
			continue
		}
		delete(r.mu.refs, p)
		unreferenced = append(unreferenced, p)
	}
	if r.st.Remote() {
		if err := r.deleteRemote(unreferenced); err != nil {
			errs = append(errs, err)
		}
		unreferenced = nil
	}
	for _, p := range unreferenced {
		if err := os.Remove(filepath.Join(r.st.Root, filepath.FromSlash(p))); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: release checkpoint %d: %w", ErrStorage, checkpointID, errors.Join(errs...))
	}
	return nil
}

// Restore replaces the registry's contents with the retained checkpoints
// (checkpoint id -> the handles of all its operators), after a restart. It
// deletes nothing; call Sweep afterwards to delete the files of checkpoints
// that were not retained.
func (r *SharedRegistry) Restore(retained map[int64][]Handle) error {
	fresh := NewSharedRegistry(r.st)
	for id, hs := range retained {
		if err := fresh.Register(id, hs); err != nil {
			return err
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.mu.checkpoints, r.mu.refs = fresh.mu.checkpoints, fresh.mu.refs
	return nil
}

// Sweep deletes every file in shared/ that no registered checkpoint
// references: uploads of aborted checkpoints, files of checkpoints that
// were not retained, temporary files of interrupted copies. Only call it
// when no Persist into the storage is running. A missing shared/ directory
// is not an error.
func (r *SharedRegistry) Sweep() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.st.Remote() {
		return r.sweepRemote()
	}
	dir := r.st.SharedDir()
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%w: sweep %s: %w", ErrStorage, dir, err)
	}
	var errs []error
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		if _, ok := r.mu.refs[sharedPrefix+e.Name()]; ok {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: sweep %s: %w", ErrStorage, dir, errors.Join(errs...))
	}
	return nil
}

// Referenced returns the sorted paths (relative to the storage root) of the
// shared files that registered checkpoints reference.
func (r *SharedRegistry) Referenced() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return sortedKeys(r.mu.refs)
}

// Checkpoints returns the sorted ids of the registered checkpoints.
func (r *SharedRegistry) Checkpoints() []int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return sortedKeys(r.mu.checkpoints)
}

func sortedKeys[K int64 | string, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// deleteRemote deletes the shared objects at paths (relative to the root).
func (r *SharedRegistry) deleteRemote(paths []string) error {
	if len(paths) == 0 {
		return nil
	}
	store, err := remoteStore(r.st.Root)
	if err != nil {
		return err
	}
	urls := make([]string, len(paths))
	for i, p := range paths {
		urls[i] = join(r.st.Root, p)
	}
	return store.Delete(context.Background(), urls)
}

// sweepRemote is Sweep on object storage: it lists shared/ and deletes
// the objects no registered checkpoint references.
func (r *SharedRegistry) sweepRemote() error {
	store, err := remoteStore(r.st.Root)
	if err != nil {
		return err
	}
	dir := r.st.SharedDir()
	objs, err := store.List(context.Background(), dir+"/")
	if err != nil {
		return fmt.Errorf("%w: sweep %s: %w", ErrStorage, dir, err)
	}
	var urls []string
	for _, o := range objs {
		name := strings.TrimPrefix(o.URL, dir+"/")
		if _, ok := r.mu.refs[sharedPrefix+name]; ok {
			continue
		}
		urls = append(urls, o.URL)
	}
	if err := store.Delete(context.Background(), urls); err != nil {
		return fmt.Errorf("%w: sweep %s: %w", ErrStorage, dir, err)
	}
	return nil
}
