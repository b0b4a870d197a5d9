package state

import (
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/flinkgo/flinkgo/internal/keygroup"
)

// Defaults of the Pebble tuning in Options: small, because a task runs one
// backend per keyed operator and a job runs many tasks in one process.
const (
	DefaultMemTableSize = 4 << 20
	DefaultCacheSize    = 8 << 20
)

// Options configures Open and Restore. They copy it; the caller's struct is
// never modified.
type Options struct {
	// Dir is the local working directory of the backend's Pebble database,
	// its snapshot staging and restore scratch space. It is a cache: Open
	// creates it, Close removes it. Dir must not exist, be empty, or be a
	// directory a previous backend left behind (it holds the marker file
	// .flinkgo-state): such leftovers are deleted. Required.
	Dir string
	// OperatorUID is the stable uid of the operator whose state this is.
	// It names the snapshot files and is checked on restore. Required.
	OperatorUID string
	// Subtask is the index of the subtask that owns this backend.
	Subtask int
	// MaxParallelism is the operator's number of key groups, in
	// [1, keygroup.UpperBoundMaxParallelism]. It cannot change once state
	// has been saved. Required.
	MaxParallelism int
	// KeyGroups are the key groups this backend owns, inside
	// [0, MaxParallelism); see SubtaskKeyGroups.
	KeyGroups KeyGroupRange
	// Clock gives the time for TTL: write timestamps, expiry, cleanup on
	// restore. Default time.Now.
	Clock func() time.Time
	// MemTableSize is the size in bytes of a Pebble memtable. Default
	// DefaultMemTableSize.
	MemTableSize int64
	// CacheSize is the size in bytes of the Pebble block cache. Default
	// DefaultCacheSize.
	CacheSize int64
	// RestoreConcurrency is the number of snapshots a rescaling Restore
	// reads and copies at a time, each with a goroutine and a Pebble
	// instance of its own. Default min(GOMAXPROCS, 4).
	RestoreConcurrency int
	// Logger receives Pebble's messages and events, tagged with the
	// operator and subtask: background errors (a failed flush or
	// compaction), write stalls, slow disks and Pebble's own errors at warn
	// or error; flushes, compactions and informational messages at debug.
	// Nil discards them.
	Logger *slog.Logger

	// fs replaces the operating system's file system under Pebble; tests
	// inject I/O errors with it.
	fs vfs.FS

	// restoreByBatch makes Restore copy rescaled state with batched writes
	// instead of building sstables and ingesting them; for benchmarks.
	restoreByBatch bool
}

// withDefaults returns a copy of o with every unset field set to its
// default.
func (o Options) withDefaults() Options {
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.MemTableSize == 0 {
		o.MemTableSize = DefaultMemTableSize
	}
	if o.CacheSize == 0 {
		o.CacheSize = DefaultCacheSize
	}
	if o.RestoreConcurrency == 0 {
		o.RestoreConcurrency = min(runtime.GOMAXPROCS(0), 4)
	}
	return o
}

// validate reports every problem of o in one error wrapping
// ErrInvalidOptions.
func (o Options) validate() error {
	var problems []string
	if o.Dir == "" {
		problems = append(problems, "Dir is empty")
	}
	if o.OperatorUID == "" {
		problems = append(problems, "OperatorUID is empty")
	}
	if o.Subtask < 0 {
		problems = append(problems, fmt.Sprintf("Subtask %d is negative", o.Subtask))
	}
	maxPOK := keygroup.ValidateMaxParallelism(o.MaxParallelism) == nil
	if !maxPOK {
		problems = append(problems, fmt.Sprintf("MaxParallelism %d is outside [1, %d]",
			o.MaxParallelism, keygroup.UpperBoundMaxParallelism))
	}
	switch kg := o.KeyGroups; {
	case kg.Start > kg.End:
		problems = append(problems, fmt.Sprintf("KeyGroups %v is empty", kg))
	case kg.Start < 0 || (maxPOK && kg.End >= o.MaxParallelism):
		problems = append(problems, fmt.Sprintf(
			"KeyGroups %v lie outside [0, %d): the key groups of a subtask come from "+
				"SubtaskKeyGroups(maxParallelism, parallelism, subtask) with the same max parallelism",
			kg, o.MaxParallelism))
	}
	if o.MemTableSize < 0 || o.MemTableSize >= 4<<30 {
		problems = append(problems, fmt.Sprintf("MemTableSize %d is outside [0, 4 GiB)", o.MemTableSize))
	}
	if o.CacheSize < 0 {
		problems = append(problems, fmt.Sprintf("CacheSize %d is negative", o.CacheSize))
	}
	if o.RestoreConcurrency < 0 {
		problems = append(problems, fmt.Sprintf("RestoreConcurrency %d is negative", o.RestoreConcurrency))
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("%w for operator %q subtask %d: %s", ErrInvalidOptions,
		o.OperatorUID, o.Subtask, strings.Join(problems, "; "))
}
