package state

import (
	"fmt"
	"path"
	"strings"
)

// Handle describes one persisted backend snapshot: whose state it is, which
// key groups it holds and the files that make it up. It is JSON-
// serializable; the caller stores the handles of a checkpoint in its
// _metadata and passes them back to Restore and to the SharedRegistry.
//
// File paths are slash-separated and relative to a base directory that the
// handle does not name, so that storage can move: the checkpoint root
// (Storage.Root) for handles of Persist, the savepoint directory for handles
// of PersistSelfContained (SelfContained true). Restore takes that base.
type Handle struct {
	OperatorUID    string        `json:"operator_uid"`
	Subtask        int           `json:"subtask"`
	MaxParallelism int           `json:"max_parallelism"`
	KeyGroups      KeyGroupRange `json:"key_groups"`
	CheckpointID   int64         `json:"checkpoint_id"`
	// SelfContained is true for savepoints: every file is under the
	// savepoint directory, and none is shared.
	SelfContained bool      `json:"self_contained,omitempty"`
	Files         []FileRef `json:"files"`
	// BytesWritten is the number of bytes this snapshot added to the
	// storage (copied or hard-linked), leaving out the shared files that
	// earlier snapshots had already written: the measure of incrementality.
	BytesWritten int64 `json:"bytes_written"`
	// StateSize is the size in bytes of all the snapshot's files.
	StateSize int64 `json:"state_size"`
}

// FileRef is one file of a snapshot.
type FileRef struct {
	// Name is the file's name in the Pebble database directory
	// (000012.sst, MANIFEST-000001, OPTIONS-000003, marker.*).
	Name string `json:"name"`
	// Path is where the file is, slash-separated, relative to the
	// checkpoint root or the savepoint directory:
	// shared/<uid>-<subtask>-<instance>-<name> for shared files,
	// chk-<n>/<uid>-<subtask>/<name> for the others, and
	// <uid>-<subtask>/<name> in a savepoint.
	Path string `json:"path"`
	// Size is the file's size in bytes.
	Size int64 `json:"size"`
	// Shared is true for the immutable files under shared/, which several
	// checkpoints may reference (see SharedRegistry).
	Shared bool `json:"shared,omitempty"`
}

// sharedPrefix is the prefix of the paths of shared files.
const sharedPrefix = "shared/"

// SharedFiles returns the paths, relative to the checkpoint root, of the
// shared files of h (shared/<name>), which the SharedRegistry counts.
// Savepoint handles have none.
func (h Handle) SharedFiles() []string {
	var out []string
	for _, f := range h.Files {
		if f.Shared {
			out = append(out, f.Path)
		}
	}
	return out
}

// String describes h briefly, for errors and logs.
func (h Handle) String() string {
	return fmt.Sprintf("operator %q subtask %d key groups %v checkpoint %d", h.OperatorUID, h.Subtask, h.KeyGroups, h.CheckpointID)
}

// validate reports the problems of h that would make a restore read files
// outside its base or open an incomplete database, in one error wrapping
// ErrIncompatibleHandle.
func (h Handle) validate() error {
	var problems []string
	if h.KeyGroups.Start < 0 || h.KeyGroups.Start > h.KeyGroups.End || h.KeyGroups.End >= h.MaxParallelism {
		problems = append(problems, fmt.Sprintf("key groups %v outside [0, %d)", h.KeyGroups, h.MaxParallelism))
	}
	names := make(map[string]bool, len(h.Files))
	manifest := false
	for _, f := range h.Files {
		switch {
		case !validFileName(f.Name):
			problems = append(problems, fmt.Sprintf("bad file name %q", f.Name))
		case names[f.Name]:
			problems = append(problems, fmt.Sprintf("file %q listed twice", f.Name))
		case !validRelPath(f.Path):
			problems = append(problems, fmt.Sprintf("file %q: path %q is not relative to the base directory", f.Name, f.Path))
		case f.Shared && (h.SelfContained || !validSharedPath(f.Path)):
			problems = append(problems, fmt.Sprintf("file %q: shared path %q is not shared/<name>", f.Name, f.Path))
		case f.Size < 0:
			problems = append(problems, fmt.Sprintf("file %q: negative size", f.Name))
		}
		names[f.Name] = true
		manifest = manifest || strings.HasPrefix(f.Name, "MANIFEST-")
	}
	if !manifest {
		problems = append(problems, "no MANIFEST file")
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %v: %s", ErrIncompatibleHandle, h, strings.Join(problems, "; "))
}

// validSharedPath reports whether p is shared/<plain file name>.
func validSharedPath(p string) bool {
	name, ok := strings.CutPrefix(p, sharedPrefix)
	return ok && validFileName(name) && path.Clean(p) == p
}
