package testkit

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Alive reports whether pid is a running (not zombie) process.
func Alive(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the parenthesized command name.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z' && s[i+2] != 'X'
}

// testServers holds the pids of the servers a test package shares (the
// Kafka broker): children of the test binary that outlive single tests,
// so ChildPids leaves them out.
var testServers sync.Map // pid -> true

// ChildPids lists the live child processes of this process, but for the
// servers that the test package shares (the Kafka broker).
func ChildPids() []int {
	self := strconv.Itoa(os.Getpid())
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var pids []int
	for _, path := range stats {
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		s := string(data)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(s[i+1:])
		if len(fields) < 2 || fields[1] != self || fields[0] == "Z" {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(path)))
		if _, shared := testServers.Load(pid); shared {
			continue
		}
		pids = append(pids, pid)
	}
	return pids
}

// WaitGone waits up to d for pid to end; it reports whether it did.
func WaitGone(pid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for Alive(pid) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// NoLeakedWorkers registers a cleanup that fails the test when a child
// process of the test binary is still running after it (a short wait lets
// processes that are already dying be reaped).
func NoLeakedWorkers(t testing.TB) {
	t.Helper()
	t.Cleanup(func() {
		deadline := time.Now().Add(3 * time.Second)
		for {
			pids := ChildPids()
			if len(pids) == 0 {
				return
			}
			if time.Now().After(deadline) {
				var desc []string
				for _, pid := range pids {
					cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
					desc = append(desc, fmt.Sprintf("%d (%s)", pid, strings.ReplaceAll(strings.TrimRight(string(cmdline), "\x00"), "\x00", " ")))
				}
				t.Errorf("leaked child processes: %s", strings.Join(desc, ", "))
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}
