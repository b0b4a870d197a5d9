package state

import (
	"os"
	"runtime"
	"syscall"
	"testing"
	"unsafe"
)

// withoutDACOverride runs fn without the capabilities that let root ignore
// file permissions (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH), so permission
// tests mean something when the tests run as root. Capabilities belong to
// an OS thread: fn runs on a goroutine locked to a thread that is dropped
// with the goroutine (it exits locked), so the rest of the process keeps
// its privileges. fn must not start goroutines doing file I/O.
func withoutDACOverride(t *testing.T, fn func()) {
	t.Helper()
	if os.Geteuid() != 0 {
		fn()
		return
	}
	type capHeader struct {
		version uint32
		pid     int32
	}
	type capData struct{ effective, permitted, inheritable uint32 }
	const capV3 = 0x20080522
	const dropped = 1<<1 | 1<<2 // CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
	done := make(chan string)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
		hdr := capHeader{version: capV3}
		var data [2]capData
		if _, _, e := syscall.RawSyscall(syscall.SYS_CAPGET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); e != 0 {
			done <- "capget: " + e.Error()
			return
		}
		data[0].effective &^= dropped
		if _, _, e := syscall.RawSyscall(syscall.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); e != 0 {
			done <- "capset: " + e.Error()
			return
		}
		fn()
		done <- ""
	}()
	if msg := <-done; msg != "" {
		t.Skipf("cannot drop root's file permission override (%s)", msg)
	}
}
