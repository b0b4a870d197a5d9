//go:build unix

package pluginrunner

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// signalGroup sends sig to the worker's process group: the worker, the
// processes a UDF started in it, but not the worker's supervisor, which left
// the group (python/flinkgo/worker/supervisor.py) and kills what escaped it
// once the worker is gone. The group's id is the supervisor's pid, so it is
// only signalled while the runtime has not reaped the supervisor: until then
// no other process can have that id.
func signalGroup(proc *os.Process, sig syscall.Signal) error {
	if err := proc.Signal(syscall.Signal(0)); err != nil {
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

// unexpectedKillNote explains a SIGKILL the runtime did not send: nothing but
// the kernel's OOM killer (or an operator) sends one, so it names the likely
// cause and the worker's peak resident memory.
func unexpectedKillNote(state *os.ProcessState) string {
	ws, ok := state.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		return ""
	}
	note := "killed by a SIGKILL the runtime did not send: the kernel's OOM killer is the likely cause"
	if ru, ok := state.SysUsage().(*syscall.Rusage); ok && ru.Maxrss > 0 {
		// Maxrss is in KiB on Linux.
		note += fmt.Sprintf(" (worker's peak RSS %d MiB); give it more memory or make the UDF use less", ru.Maxrss/1024)
	}
	return note
}
