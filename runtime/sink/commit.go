package sink

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/flinkgo/flinkgo/internal/beneath"
	"github.com/flinkgo/flinkgo/internal/fsutil"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
)

// Committable is what a file sink subtask hands to a checkpoint: a part
// written and closed (fsynced) but not yet visible, to publish when the
// checkpoint completes. JSON-serializable; part of the sink's checkpointed
// state.
type Committable struct {
	Pending string `json:"pending"` // path of the hidden finished file
	Final   string `json:"final"`   // path it is renamed to on commit
}

// SinkState is a file sink subtask's checkpointed state, the bytes its
// PreCommit returns as JSON.
type SinkState struct {
	Pending []Committable `json:"pending"` // precommitted, not yet committed
	// Counter is the subtask's next part number.
	Counter int64 `json:"counter"`
}

// DecodeState decodes a file sink subtask's checkpointed state (nil: an
// empty state).
func DecodeState(b []byte) (SinkState, error) {
	var st SinkState
	if len(b) == 0 {
		return st, nil
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("sink: the file sink's checkpointed state does not decode: %w", err)
	}
	if st.Counter < 0 {
		return st, fmt.Errorf("sink: the file sink's restored part counter %d is below 0", st.Counter)
	}
	return st, nil
}

// ErrCommittableLost is returned (wrapped) by Commit and Recover when
// neither the pending file of a committable nor its final file exists: the
// published output was removed (a restore of an old checkpoint whose files
// someone deleted) or the state does not belong to this directory. The rows
// cannot be published; retrying does not help, so the caller fails the
// commit or the restore and reports it.
var ErrCommittableLost = errors.New("sink: committable lost")

// partName is the published name of part n of a subtask.
func partName(id string, subtask int, n int64, ext string) string {
	return fmt.Sprintf("part-%s-%d-%d.%s", id, subtask, n, ext)
}

// legacyName is the single file of a writer that takes no part in
// checkpoints.
func legacyName(subtask int, ext string) string { return fmt.Sprintf("part-%d.%s", subtask, ext) }

// oneFileName is the single file of a writer that takes no part in
// checkpoints: the legacy name in mode ERROR (the directory was empty),
// else one carrying the writer's id, so that it collides neither with a
// previous run's files (APPEND) nor replaces them before the job's output
// is committed (OVERWRITE).
func oneFileName(mode planpb.FileSink_Mode, id string, subtask int, ext string) string {
	if mode == planpb.FileSink_ERROR {
		return legacyName(subtask, ext)
	}
	return fmt.Sprintf("part-%s-%d.%s", id, subtask, ext)
}

func inProgressName(part string) string { return "." + part + ".inprogress" }
func pendingName(part string) string    { return "." + part + ".pending" }

// isHiddenPart reports whether a file name is an in-progress or pending
// part of a file sink, of this version or an earlier one
// (.part-<subtask>.<ext>.inprogress).
func isHiddenPart(name string) bool {
	return strings.HasPrefix(name, ".part-") &&
		(strings.HasSuffix(name, ".inprogress") || strings.HasSuffix(name, ".pending"))
}

// check reports whether c names a pending part and its final name in one
// directory, so that a corrupt state renames nothing else.
func (c Committable) check() error {
	pdir, pending := filepath.Split(c.Pending)
	fdir, final := filepath.Split(c.Final)
	if filepath.Clean(pdir) != filepath.Clean(fdir) || !strings.HasPrefix(final, "part-") || pending != pendingName(final) {
		return fmt.Errorf("sink: committable {%q, %q} is not a pending part and its published name", c.Pending, c.Final)
	}
	return nil
}

// commit publishes c by renaming its pending file to its final name. A
// committable whose pending file is gone and whose final file exists was
// committed before: commit is idempotent. The caller syncs the directory
// and wraps the error.
func commit(c Committable) error {
	err := os.Rename(c.Pending, c.Final)
	if err == nil {
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if _, serr := os.Lstat(c.Final); serr == nil {
		return nil
	}
	return fmt.Errorf("%w: neither %s nor %s exists", ErrCommittableLost, c.Pending, c.Final)
}

// Recover prepares the directory of file sink s for a job restored from a
// checkpoint whose file sink subtasks checkpointed states (all of them, in
// any order; a rescaled job redistributes them as it likes afterwards). Run
// it once per file sink before any subtask of the restored job writes, and
// after every task of the failed attempt stopped.
//
// The checkpoint completed, so Recover first publishes every committable of
// states, as Commit does (one already published counts as done). Then it
// removes every hidden in-progress and pending part in the directory that no
// state names: the leftovers of the failed attempt, written after the
// checkpoint. Readers then see exactly the rows up to the checkpoint. If a
// committable cannot be published, Recover removes nothing.
//
// Recover blocks on renames, removals and directory fsyncs. It is
// idempotent: after a failure during recovery, run it again with the same
// states. An error wrapping ErrCommittableLost does not go away by retrying.
// A directory that does not exist holds nothing to recover.
func Recover(s *planpb.FileSink, states []SinkState) error {
	return RecoverBeneath(nil, s, states)
}

// RecoverBeneath is Recover with the sink's directory opened through paths
// (see beneath.Paths; nil: by name): its renames and removals are made in
// the directory opened from the allowed root, not through a link swapped
// in since the check.
func RecoverBeneath(paths beneath.Paths, s *planpb.FileSink, states []SinkState) error {
	dir := s.GetPath()
	if dir == "" {
		return errors.New("sink: recover: the file sink has no path")
	}
	pin, err := beneath.OpenDir(paths, "the file sink's directory", dir, false)
	if errors.Is(err, fs.ErrNotExist) {
		pin, err = beneath.Named(dir, false) // nothing there: the commits below fail, naming what is lost
	}
	if err != nil {
		return fmt.Errorf("sink: recover: %w", err)
	}
	defer pin.Close()
	work := func(p string) string {
		if filepath.Clean(filepath.Dir(p)) == filepath.Clean(dir) {
			return filepath.Join(pin.Path(), filepath.Base(p))
		}
		return p
	}
	// Check every committable before renaming any.
	var errs []error
	named := map[string]bool{}
	for _, st := range states {
		for _, c := range st.Pending {
			if err := c.check(); err != nil {
				errs = append(errs, err)
			}
			named[filepath.Clean(c.Pending)] = true
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("sink: recover %s: %w", dir, errors.Join(errs...))
	}
	dirs := map[string]bool{}
	for _, st := range states {
		for _, c := range st.Pending {
			if err := commit(Committable{Pending: work(c.Pending), Final: work(c.Final)}); err != nil {
				errs = append(errs, err)
				continue
			}
			dirs[filepath.Dir(work(c.Final))] = true
		}
	}
	for d := range dirs {
		if err := fsutil.SyncDir(d); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("sink: recover %s: %w", dir, errors.Join(errs...))
	}

	entries, err := os.ReadDir(pin.Path())
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("sink: recover: %w", err)
	}
	removed := false
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		if e.IsDir() || !isHiddenPart(e.Name()) || named[filepath.Clean(path)] {
			continue
		}
		if err := os.Remove(work(path)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		removed = true
	}
	if removed {
		if err := fsutil.SyncDir(pin.Path()); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("sink: recover %s: %w", dir, errors.Join(errs...))
	}
	return nil
}
