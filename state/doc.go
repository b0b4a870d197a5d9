// Package state holds keyed operator state on Pebble, as Flink's RocksDB
// keyed state backend: per-key value, list, map, reducing and aggregating
// state split into key groups, with Flink's TTL semantics, incremental
// checkpoints into a shared checkpoint storage, self-contained savepoints,
// reference counting of shared files, and restore with rescaling.
//
// It depends on Pebble, the standard library, golang.org/x/sync/errgroup,
// internal/fsutil and runtime/partition (the key-group arithmetic) only.
// It must not import the runtime's tasks (runtime/task, runtime/job), the udf packages
// or protocol buffers, start goroutines that outlive a call, or know how
// checkpoints are coordinated: the
// runtime calls PrepareSnapshot at the barrier, Persist on a goroutine of
// its own, stores the returned Handles in the checkpoint's _metadata and
// tells a SharedRegistry which checkpoints complete and which are subsumed.
//
// # Keys and layout
//
// Every state call takes a Key: the key group the caller computed with
// runtime/partition and the serialized key. A backend owns a range of key
// groups (Options.KeyGroups) and rejects keys of other groups
// (ErrKeyGroup). All states of a backend share one Pebble database, whose
// keys are
//
//	group (2 bytes, big-endian) | uvarint len(name) | name |
//	uvarint len(key) | key [| user key]
//
// with the encoded user key appended for map state (one Pebble key per map
// entry). The key group comes first, so the state of a key-group range is
// one contiguous span of the database, and within it the entries of a
// key group are contiguous, ordered by state then key; a rescale copies
// whole spans. The state's name is stored in every key rather than a
// numeric id assigned at registration, so that databases of backends that
// registered different states, or the same states in another order, merge
// correctly on rescale; the length prefixes keep every state's and every
// key's span free of other entries, and Pebble's prefix compression makes
// the repeated name cheap. One more entry per state, 0xFF | name (after
// every key group), records the state's kind and TTL, so that a restored
// state is checked when it is registered again and expired entries are
// dropped during the restore, before the job registers its states.
//
// Values are stored as a header byte, then (when the state has a TTL) the
// 8-byte write timestamp in Unix milliseconds, then the codec's bytes. A
// list is the concatenation of length-prefixed elements, each with its own
// header and timestamp; List.Add appends with a Pebble merge (the default
// concatenating merger) without reading, as the RocksDB list state does.
//
// Pebble runs without a WAL and writes do not sync: durability comes from
// checkpoints, as with Flink's RocksDB backend, and the working directory
// (Options.Dir) is a cache that Close removes.
//
// # TTL
//
// WithTTL follows Flink's StateTtlConfig: the update type (on create and
// write, or also on read) and the visibility (never return expired, or
// return expired if not cleaned up: returned once, by the read that
// removes it). Expired entries are removed lazily when a read meets them,
// by Backend.CleanupExpired (a full sweep), and when a snapshot is restored.
// Whole-state iteration (ForEach) does not refresh timestamps. Entries
// written before a state had a TTL have no timestamp and do not expire
// until rewritten; a TTL changed across a restore applies to the old
// timestamps.
//
// # Checkpoints, savepoints and restore
//
// Checkpoint storage is laid out as DESIGN §4.7 (see Storage):
// <root>/{shared/, taskowned/, chk-<n>/}. PrepareSnapshot (synchronous, at
// the barrier) flushes the memtable and takes a Pebble checkpoint of hard
// links into a staging directory. Persist (asynchronous) puts every
// sstable into shared/ under a name unique to the backend instance and the
// file, <uid>-<subtask>-<instance>-<file>.sst; sstables are immutable, so
// a name already there is reused without writing a byte, and a checkpoint
// writes only the sstables created since the previous one (Flink's
// incremental checkpoints). The other files go to chk-<n>/<uid>-<subtask>/.
// Files are hard-linked when the storage is on the working directory's
// filesystem, else copied (temporary name, fsync, rename). A backend
// restored from a checkpoint of the same storage with the same key groups
// reuses the restored shared files too. PersistSelfContained writes a
// savepoint: every file under one directory, movable.
//
// A Handle lists a snapshot's files with paths relative to a base it does
// not name: the checkpoint root for Persist's handles, the savepoint
// directory for PersistSelfContained's (Handle.SelfContained); Restore
// takes that base as an argument. Restore with the same key groups as one
// handle opens its files as they are; with other key groups (rescaling) it
// opens each intersecting snapshot read-only and copies the span of the
// intersecting key groups into sstables that the new database ingests, so
// that keys outside the new range never appear in it.
//
// SharedRegistry counts the references of completed checkpoints to shared
// files and deletes those no retained checkpoint references, as Flink's
// SharedStateRegistry; the private chk-<n> directory is removed by the
// caller (Storage.RemoveCheckpoint) with the checkpoint's _metadata.
//
// # Concurrency and errors
//
// A Backend and its states are used by one goroutine, the task's; only a
// PendingSnapshot's Persist may run on another goroutine meanwhile, and
// Close cancels and waits for it. A SharedRegistry is safe for concurrent
// use. Errors start with "state: ", name the state, operator and subtask,
// and wrap one of the Err* sentinels that say how to react. I/O errors are
// returned, never turned into panics, with one exception that is Pebble's:
// when Pebble cannot write its MANIFEST it calls its Fatalf, which must
// not return; the backend panics there with the operator's name instead of
// exiting the process.
package state
