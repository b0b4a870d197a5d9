//go:build unix

package pluginrunner

import (
	"errors"
	"os"
	"syscall"
)

// signalGroup sends sig to the worker and then to its whole process group
// (the worker is its leader), so processes a UDF started die with it. The
// worker is signalled through os.Process first, which knows whether it was
// reaped: a reaped worker's pid and group id may belong to someone else.
func signalGroup(proc *os.Process, sig syscall.Signal) error {
	if err := proc.Signal(sig); err != nil {
		if errors.Is(err, os.ErrProcessDone) {
			return nil
		}
		return err
	}
	if err := syscall.Kill(-proc.Pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}
