//go:build unix && !linux

package pluginrunner

import "syscall"

// workerSysProcAttr starts the worker as the leader of its own process
// group, so a signal to the group also reaches children a UDF started.
func workerSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// parentPid is pid's parent process id where the system tells it cheaply;
// here it does not (0).
func parentPid(int) int { return 0 }
