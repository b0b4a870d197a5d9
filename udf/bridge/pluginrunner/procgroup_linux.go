//go:build linux

package pluginrunner

import "syscall"

// workerSysProcAttr starts the worker as the leader of its own process
// group, so a signal to the group also reaches children a UDF started, and
// asks the kernel to SIGKILL it when the host dies. The window between fork
// and the kernel arming Pdeathsig is covered by the worker itself: it
// compares its parent with FLINKGO_HOST_PID at start.
func workerSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
