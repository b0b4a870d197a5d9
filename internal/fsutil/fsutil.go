// Package fsutil holds the file-system steps that make writes durable,
// shared by the packages that publish files (checkpoint metadata, keyed
// state snapshots, sink part files). Standard library only.
package fsutil

import "os"

// SyncDir fsyncs directory dir, so that the entries created, renamed or
// removed in it survive a crash. Its errors name dir (*os.PathError).
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
