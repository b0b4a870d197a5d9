//go:build linux

package pluginrunner

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// workerSysProcAttr starts the worker (its supervisor, which forks it) as
// the leader of its own process group, so a signal to the group also
// reaches children a UDF started, and asks the kernel to send the
// supervisor SIGTERM when the host dies: it then kills the worker and every
// process it started, which a SIGKILL to the supervisor alone would leave
// running. The window between fork and the kernel arming Pdeathsig is
// covered by the supervisor itself: it compares its parent with
// FLINKGO_HOST_PID at start.
func workerSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}

// parentPid is pid's parent process id from /proc, or 0.
func parentPid(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// Fields after the command's closing parenthesis: state ppid ...
	rest := bytes.Fields(b[bytes.LastIndexByte(b, ')')+1:])
	if len(rest) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(string(rest[1]))
	return ppid
}
