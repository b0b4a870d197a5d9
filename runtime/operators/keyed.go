package operators

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/flinkgo/flinkgo/runtime/checkpoint"
	"github.com/flinkgo/flinkgo/runtime/operator"
	"github.com/flinkgo/flinkgo/state"
)

// keyedState is a keyed operator subtask's Pebble backend (package state):
// one value state of bytes under each key and its key group. Operators keep
// what they need in memory, as a cache of it, and write what changed at
// each checkpoint; the backend's snapshot makes them survive failover and
// rescale by key group. It is opened at the first checkpoint, or at once
// when the job restores a snapshot that holds it: a job that never
// checkpoints never opens it.
type keyedState struct {
	uid      string
	name     string // the value state's name
	subtask  int
	maxP     int
	keys     state.KeyGroupRange
	dir      string // the backend's scratch directory
	backend  *state.Backend
	values   *state.Value[[]byte]
	complete bool // everything is in memory (nothing only in the backend)
	// cacheGroups is how many keys the operator keeps in memory after a
	// checkpoint wrote them to the backend (Options.KeyedCacheGroups).
	cacheGroups int
	buf         []byte
	log         *slog.Logger // the operator's, for the backend's Pebble logs
	// clock is the state's TTL clock (nil: time.Now); tests set it.
	clock     func() time.Time
	stateOpts []state.StateOption
	// memTable and cache size Pebble's memtable and block cache (0: the
	// state package's defaults); the join reads and writes every row.
	memTable, cache int64
	// persist is the asynchronous part of the last snapshot, until taken.
	persist func(context.Context, *checkpoint.SubtaskState) error
}

// setup makes the scratch directory and restores the backend when the job
// restores a snapshot that holds it.
// opts configure the value state (a TTL).
func (k *keyedState) setup(ctx context.Context, c *operator.Context, name string, cacheGroups int, opts ...state.StateOption) error {
	*k = keyedState{uid: c.Op.UID, name: name, subtask: c.Subtask, maxP: c.MaxParallelism, complete: true,
		cacheGroups: cacheGroups, keys: c.Keyed.KeyGroups, log: c.Logger, clock: k.clock, stateOpts: opts,
		memTable: k.memTable, cache: k.cache}
	dir, err := os.MkdirTemp(c.Keyed.StateDir, "flinkgo-state-")
	if err != nil {
		return fmt.Errorf("creating the local state directory: %w", err)
	}
	k.dir = dir
	st := c.Restored
	if st == nil {
		return nil
	}
	var handles []state.Handle
	for _, sub := range st.Subtasks {
		var h state.Handle
		if err := json.Unmarshal(sub.Keyed, &h); err != nil {
			return fmt.Errorf("restoring keyed state: subtask %d's handle is invalid: %w", sub.Subtask, err)
		}
		handles = append(handles, h)
	}
	b, err := state.Restore(ctx, k.options(), c.RestoreBase, handles)
	if err != nil {
		return fmt.Errorf("restoring keyed state: %w", err)
	}
	k.complete = false
	return k.use(b)
}

func (k *keyedState) options() state.Options {
	return state.Options{Dir: filepath.Join(k.dir, "db"), OperatorUID: k.uid, Subtask: k.subtask, MaxParallelism: k.maxP, KeyGroups: k.keys, Logger: k.log, Clock: k.clock,
		MemTableSize: k.memTable, CacheSize: k.cache}
}

func (k *keyedState) use(b *state.Backend) error {
	values, err := state.NewValue(b, k.name, state.BytesCodec{}, k.stateOpts...)
	if err != nil {
		_ = b.Close()
		return err
	}
	k.backend, k.values = b, values
	return nil
}

// open opens the backend if it is not yet.
func (k *keyedState) open() error {
	if k.backend != nil {
		return nil
	}
	b, err := state.Open(k.options())
	if err != nil {
		return fmt.Errorf("opening keyed state: %w", err)
	}
	return k.use(b)
}

// snapshot takes a Pebble checkpoint of the backend (the synchronous
// part, hard links) and keeps the writing out for takePersist.
func (k *keyedState) snapshot(target checkpoint.Target) error {
	pending, err := k.backend.PrepareSnapshot(target.ID)
	if err != nil {
		return err
	}
	k.persist = func(ctx context.Context, st *checkpoint.SubtaskState) error {
		var h state.Handle
		var err error
		if target.Savepoint {
			h, err = pending.PersistSelfContained(ctx, target.Dir)
		} else {
			h, err = pending.Persist(ctx, state.Storage{Root: target.Dir})
		}
		if err != nil {
			return errors.Join(err, pending.Discard())
		}
		st.Keyed, err = json.Marshal(h)
		return err
	}
	return nil
}

// takePersist returns the asynchronous part of the last snapshot: it
// writes the Pebble checkpoint out (incrementally into the checkpoint
// storage, or whole into a savepoint's directory) and fills st.Keyed. It
// may run on another goroutine while the task writes to the backend.
func (k *keyedState) takePersist() func(context.Context, *checkpoint.SubtaskState) error {
	f := k.persist
	k.persist = nil
	return f
}

// release closes the backend and removes its scratch directory.
func (k *keyedState) release() {
	if k.backend != nil {
		_ = k.backend.Close()
		k.backend = nil
	}
	if k.dir != "" {
		_ = os.RemoveAll(k.dir)
		k.dir = ""
	}
}

// now is the state's clock's time.
func (k *keyedState) now() time.Time {
	if k.clock != nil {
		return k.clock()
	}
	return time.Now()
}
