// Package state holds keyed operator state on Pebble, as Flink's RocksDB
// keyed state backend: per-key value, list, map, reducing and aggregating
// state and event-time and processing-time timers, split into key groups,
// with Flink's TTL semantics, incremental checkpoints into a shared
// checkpoint storage, self-contained savepoints, reference counting of
// shared files, and restore with rescaling.
//
// It depends on Pebble, the standard library, golang.org/x/sync/errgroup,
// internal/fsutil, internal/logging and internal/keygroup (the key-group
// arithmetic) only. It
// must not import Arrow, the runtime's tasks (runtime/task, runtime/job), the udf
// packages or protocol buffers, start goroutines that outlive a call, or
// know how checkpoints are coordinated: the runtime calls PrepareSnapshot at
// the barrier, Persist on a goroutine of its own, stores the returned
// Handles in the checkpoint's _metadata and tells a SharedRegistry which
// checkpoints complete and which are subsumed.
//
// # Keys and layout
//
// Every state call takes a Key: the key group the caller computed with
// runtime/partition (partition.KeyGroups of a batch) or internal/keygroup
// (keygroup.ForHash of a key hash) and the serialized key. A backend owns a range of key
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
// # Timers
//
// A TimerService (NewTimerService, one per name and backend: "window-timers",
// "join-timers") holds an operator's timers, as Flink's InternalTimerService:
// an event-time queue, fired by AdvanceWatermark, and a processing-time
// queue, fired by AdvanceProcessingTime (NextProcessingTime says when to
// wake up). A timer is (timestamp in ms, Key, namespace), registered and
// deleted by that triple and deduplicated on it. AdvanceWatermark(wm)
// fires every timer at or before wm in timestamp order, ties by key
// (shorter first, then bytes) and then namespace, removing each before
// calling back; a timer registered by the callback at or before wm fires in
// the same call, as in Flink. The watermark itself is not stored: a
// restored service starts from math.MinInt64 and fires what the next
// watermark passes.
//
// Each queue is a state of kind "timers" named _timer_state/event_<name>
// or _timer_state/processing_<name> (Flink's names), with a meta entry, so
// no other state can take the name. Every timer is one Pebble entry with an
// empty value whose key has the layout of a state entry, the 8-byte
// timestamp standing as the key and the timer's key and namespace as the
// rest:
//
//	group | uvarint len(name) | name | 0x08 | timestamp (8 bytes,
//	big-endian, sign bit flipped) | uvarint len(key) | key | namespace
//
// Flipping the sign bit makes the bytes sort as the numbers, negative ones
// first. So a key group's timers are one span ordered by firing order, and
// snapshots, incremental checkpoints, the TTL sweep and the rescaling
// restore handle them as any state: a timer is restored into the subtask
// that owns its key group. Registering is one Pebble write without a read
// (writing an existing timer again is the deduplication), or nothing when
// the timer is in the cache already; firing is one delete. In memory, each key group caches its earliest timers (16384
// divided among the key groups, between 8 and 128 each), reloaded from
// Pebble, starting after the last one removed, when the cache drains; a
// heap of the key groups ordered by their earliest timer gives the next
// timer, so an advance with nothing due is one comparison and reads no
// storage. NewTimerService reads the earliest timer of each key group.
//
// # Checkpoints, savepoints and restore
//
// Checkpoint storage is laid out as docs/semantics.md#checkpoints says (see
// Storage): <root>/{shared/, taskowned/, chk-<n>/}. PrepareSnapshot
// (synchronous, at the barrier) flushes the memtable and takes a Pebble
// checkpoint of hard links into a staging directory. Persist (asynchronous)
// puts every sstable into shared/ under a name unique to the backend instance
// and the file, <uid>-<subtask>-<instance>-<file>.sst; sstables are immutable,
// so a name already there is reused without writing a byte, and a checkpoint
// writes only the sstables created since the previous one (Flink's incremental
// checkpoints). The other files go to chk-<n>/<uid>-<subtask>/.
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
// returned, never turned into panics. When Pebble cannot go on (a failed
// MANIFEST write, corrupt data) it calls its Logger's Fatalf, which by
// default exits the process; the backend logs the error instead, marks
// itself failed and returns ErrBackendFailed from every later call, so only
// the task fails. Pebble's background errors (a failed flush or
// compaction, which it retries), write stalls and slow disks reach
// Options.Logger as warnings.
package state
