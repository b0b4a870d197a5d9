package sink

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/flinkgo/flinkgo/internal/beneath"
	"github.com/flinkgo/flinkgo/internal/fsutil"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
)

// Previous is what a file sink's directory held when the job was
// submitted, kept by mode "overwrite" to delete once the job's output is
// committed. A nil *Previous deletes nothing.
type Previous struct {
	dir   string
	paths beneath.Paths // opens dir (nil: by name)
	mu    struct {
		sync.Mutex
		names []string // visible entries still to delete
	}
}

// Names returns the entries still to delete, sorted.
func (p *Previous) Names() []string {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.mu.names...)
}

// Prepare applies the mode of file sink s to its directory when a job is
// submitted: once per job, before any task writes. restoring says that the
// job starts from a checkpoint or savepoint, whose directory holds the
// job's own committed parts: then no mode refuses or records anything.
//
//   - ERROR refuses a directory holding a visible entry (a name not
//     starting with "." or "_", as Spark). Hidden parts a crashed run left
//     (.part-*.inprogress, .pending) do not count: readers skip them, and a
//     later Recover of that run's checkpoint still finds them.
//   - OVERWRITE records the visible entries: the caller deletes them with
//     Previous.Delete once the job's output is committed.
//   - APPEND checks nothing: part names carry an id, so they never collide.
//
// It returns nil and no error when there is nothing to delete later.
func Prepare(s *planpb.FileSink, restoring bool) (*Previous, error) {
	return PrepareBeneath(nil, s, restoring)
}

// PrepareBeneath is Prepare with the sink's directory opened through paths
// (see beneath.Paths; nil: by name), here and in Previous.Delete: what
// mode "overwrite" deletes is deleted in the directory opened from the
// allowed root, never through a link swapped in since the check.
func PrepareBeneath(paths beneath.Paths, s *planpb.FileSink, restoring bool) (*Previous, error) {
	dir := s.GetPath()
	if restoring || s.GetMode() == planpb.FileSink_APPEND {
		return nil, nil
	}
	names, err := visibleEntries(paths, dir)
	if err != nil {
		return nil, fmt.Errorf("sink: %s: %w", dir, err)
	}
	if len(names) == 0 {
		return nil, nil
	}
	switch s.GetMode() {
	case planpb.FileSink_ERROR:
		return nil, fmt.Errorf("sink: the output directory %s already holds %d file(s) (%s): "+
			"to replace them once the new output is committed, pass mode=\"overwrite\"; to add to them, mode=\"append\"; "+
			"or write into an empty or new directory",
			dir, len(names), listed(names, 3))
	case planpb.FileSink_OVERWRITE:
		p := &Previous{dir: dir, paths: paths}
		p.mu.names = names
		return p, nil
	}
	return nil, fmt.Errorf("sink: %s: unknown mode %s", dir, s.GetMode())
}

// Delete removes the recorded entries (directories with their content) and
// syncs the directory. It is idempotent: an entry already gone counts as
// deleted, and an entry it failed to delete stays for the next call.
func (p *Previous) Delete() error {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.mu.names) == 0 {
		return nil
	}
	pin, err := beneath.OpenDir(p.paths, "the file sink's directory", p.dir, false)
	if errors.Is(err, fs.ErrNotExist) {
		p.mu.names = nil // gone with everything in it
		return nil
	}
	if err != nil {
		return fmt.Errorf("sink: overwriting %s: deleting the previous output: %w", p.dir, err)
	}
	defer pin.Close()
	var errs []error
	var left []string
	for _, name := range p.mu.names {
		// RemoveAll does not follow links below the directory it is given.
		if err := os.RemoveAll(filepath.Join(pin.Path(), name)); err != nil {
			errs = append(errs, err)
			left = append(left, name)
		}
	}
	if err := fsutil.SyncDir(pin.Path()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, err)
		left = p.mu.names
	}
	p.mu.names = left
	if len(errs) > 0 {
		return fmt.Errorf("sink: overwriting %s: deleting the previous output: %w", p.dir, errors.Join(errs...))
	}
	return nil
}

// visibleEntries lists the names in dir not starting with "." or "_",
// sorted; none when dir does not exist.
func visibleEntries(paths beneath.Paths, dir string) ([]string, error) {
	pin, err := beneath.OpenDir(paths, "the file sink's directory", dir, false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer pin.Close()
	entries, err := os.ReadDir(pin.Path())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if n := e.Name(); !strings.HasPrefix(n, ".") && !strings.HasPrefix(n, "_") {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names, nil
}

// listed names up to n entries, then how many more.
func listed(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:n], ", "), len(names)-n)
}
