package state

import "errors"

// ErrInvalidOptions wraps every error of Open and Restore about their
// Options: a missing directory or operator uid, a max parallelism out of
// range, key groups outside [0, MaxParallelism). It is a configuration bug:
// report it and do not start the task.
var ErrInvalidOptions = errors.New("state: invalid options")

// ErrClosed is returned by every call on a Backend, its states or its
// pending snapshots after Close. The task is shutting down; stop using the
// backend.
var ErrClosed = errors.New("state: backend closed")

// ErrKeyGroup is returned by state calls whose Key.Group is outside the
// backend's key groups. The key reached the wrong subtask: a bug in routing
// or in the key-group computation; fail the task.
var ErrKeyGroup = errors.New("state: key group outside the backend's range")

// ErrStateConflict is returned when a state name is registered with another
// kind (value, list, map, ...) or another TTL than it already has in this
// backend, or with another kind than the restored snapshot recorded for it.
// It is a bug in the job: two states share a name. Rename one.
var ErrStateConflict = errors.New("state: state registered twice with different descriptors")

// ErrCorrupt is returned when stored bytes cannot be decoded: a codec that
// does not match the one the state was written with, or a damaged snapshot.
// Fail the task; restoring will fail the same way until the codec is fixed.
var ErrCorrupt = errors.New("state: corrupt state")

// ErrStorage wraps errors of the checkpoint storage (Storage.Init, Persist,
// Restore's reading of files, the SharedRegistry's deletions), which name
// the path and the operation that failed. A failed Persist fails only that
// checkpoint.
var ErrStorage = errors.New("state: checkpoint storage")

// ErrIncompatibleHandle is returned by Restore when the handles do not fit
// the backend to restore: another max parallelism, another operator uid,
// overlapping key groups, or a file list that cannot describe a snapshot.
var ErrIncompatibleHandle = errors.New("state: incompatible snapshot handle")

// ErrSnapshotUsed is returned by Persist and PersistSelfContained when the
// PendingSnapshot was already persisted or discarded: each pending snapshot
// is persisted at most once.
var ErrSnapshotUsed = errors.New("state: pending snapshot already persisted or discarded")

// ErrInvalidState is returned when a state cannot be registered as
// described: an empty name, a nil codec or function, an invalid TTL; and
// when a TimerService is advanced from one of its own timer callbacks. It
// is a bug in the job.
var ErrInvalidState = errors.New("state: invalid state descriptor")

// ErrBackendFailed is returned by every state call and PrepareSnapshot
// after Pebble reported a fatal error (a failed MANIFEST write, corrupt
// data): the database can no longer be trusted. Fail the task; it restarts
// from its last checkpoint with a new backend.
var ErrBackendFailed = errors.New("state: backend failed")
