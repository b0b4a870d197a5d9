package checkpoint

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/flinkgo/flinkgo/internal/beneath"
	"github.com/flinkgo/flinkgo/internal/objstore"
)

// RestorePoint is a completed snapshot to start from; Base is the
// directory its relative paths resolve against.
type RestorePoint struct {
	Meta *Metadata
	Base string
	// pin is Base opened beneath its allowed directory when Base is its
	// path (OpenRestorePoint), nil otherwise.
	pin *beneath.Dir
}

// Operator returns the state of the operator with uid, or nil (also for a
// nil RestorePoint: a fresh start).
func (r *RestorePoint) Operator(uid string) *OperatorState {
	if r == nil {
		return nil
	}
	for i := range r.Meta.Operators {
		if r.Meta.Operators[i].UID == uid {
			return &r.Meta.Operators[i]
		}
	}
	return nil
}

// OpenRestorePoint reads the snapshot at path (a savepoint directory, a
// retained chk-<n> directory or its _metadata file) to restore from.
//
// A local snapshot is opened beneath the allowed directory it lies under
// (paths; nil: by name) and kept open until Close: its _metadata and every
// file it lists are read through that descriptor, refusing symbolic
// links, so a directory swapped for a link after the check at submission
// cannot make the runtime read another directory's files. Base is then
// the path through the descriptor (never shown to users: ShowNames turns
// it back into the name). For a checkpoint, whose files lie under its
// storage root, the root is opened and must hold the chk-<n> directory
// read.
func OpenRestorePoint(paths beneath.Paths, path string) (*RestorePoint, error) {
	if objstore.IsURL(path) {
		m, base, err := LoadMetadata(path)
		if err != nil {
			return nil, err
		}
		if !m.Savepoint {
			base = ParentDir(base) // a checkpoint's paths are relative to its storage root
		}
		return &RestorePoint{Meta: m, Base: base}, nil
	}
	dir, file := filepath.Clean(path), "_metadata"
	pin, data, err := readMetadataBeneath(paths, dir, file)
	if errors.Is(err, syscall.ENOTDIR) {
		dir, file = filepath.Dir(dir), filepath.Base(dir) // the _metadata file itself
		pin, data, err = readMetadataBeneath(paths, dir, file)
	}
	if err != nil {
		return nil, unreadable(path, err)
	}
	m, err := parseMetadata(filepath.Join(dir, file), data)
	if err != nil {
		_ = pin.Close()
		return nil, err
	}
	if m.Savepoint {
		return &RestorePoint{Meta: m, Base: pin.Path(), pin: pin}, nil
	}
	root, err := storageRootOf(paths, pin)
	_ = pin.Close()
	if err != nil {
		return nil, fmt.Errorf("checkpoint: the restore path %s: %w", path, err)
	}
	return &RestorePoint{Meta: m, Base: root.Path(), pin: root}, nil
}

// readMetadataBeneath opens dir beneath its allowed directory and reads
// its file. On success the caller owns the open dir.
func readMetadataBeneath(paths beneath.Paths, dir, file string) (*beneath.Dir, []byte, error) {
	pin, err := beneath.OpenDir(paths, "the restore path", dir, false)
	if err != nil {
		return nil, nil, err
	}
	data, err := readBeneath(pin.Path(), file)
	if err != nil {
		err = pin.ShowNames(err)
		_ = pin.Close()
		return nil, nil, err
	}
	return pin, data, nil
}

// storageRootOf opens the parent of the checkpoint directory chk, and
// checks that its entry of chk's name is the directory chk was read from.
func storageRootOf(paths beneath.Paths, chk *beneath.Dir) (*beneath.Dir, error) {
	root, err := beneath.OpenDir(paths, "the checkpoint's storage directory", filepath.Dir(chk.Name()), false)
	if err != nil {
		return nil, err
	}
	if !chk.Pinned() {
		return root, nil
	}
	again, err := root.Sub(filepath.Base(chk.Name()), false)
	if err == nil {
		defer again.Close()
		var was, is os.FileInfo
		if was, err = os.Stat(chk.Path()); err == nil {
			if is, err = os.Stat(again.Path()); err == nil && !os.SameFile(was, is) {
				err = fmt.Errorf("%s changed while it was read: it is no longer the directory its _metadata came from", chk.Name())
			}
		}
	}
	if err != nil {
		_ = root.Close()
		return nil, err
	}
	return root, nil
}

// ShowNames turns Base, in err's message, back into the path the user
// named.
func (r *RestorePoint) ShowNames(err error) error {
	if r == nil {
		return err
	}
	return r.pin.ShowNames(err)
}

// Close releases the snapshot's directory; Base is invalid after it.
func (r *RestorePoint) Close() error {
	if r == nil {
		return nil
	}
	return r.pin.Close()
}
