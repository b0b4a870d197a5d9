package pluginrunner

import (
	"fmt"
	"net"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// sharedMemorySupported says whether TransportSharedMemory works here.
const sharedMemorySupported = true

// newSharedRegion creates an anonymous memory file (memfd: it has no name
// in any file system, so nothing can be left behind) of 2*slots slots and
// maps it. Its pages are allocated as they are first written: a slot costs
// the memory of the largest payload it carried.
func newSharedRegion(slots int, slotBytes int64) (*sharedRegion, int, error) {
	fd, err := unix.MemfdCreate("flinkgo-udf-batches", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, -1, fmt.Errorf("memfd_create: %w", err)
	}
	size := 2 * int64(slots) * slotBytes
	if err := unix.Ftruncate(fd, size); err != nil {
		_ = unix.Close(fd)
		return nil, -1, fmt.Errorf("size the shared region to %d bytes: %w", size, err)
	}
	mem, err := unix.Mmap(fd, 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		_ = unix.Close(fd)
		return nil, -1, fmt.Errorf("map the shared region (%d bytes): %w", size, err)
	}
	return &sharedRegion{mem: mem, slots: slots, slotBytes: slotBytes, retained: make([]atomic.Bool, slots)}, fd, nil
}

func unmapRegion(mem []byte) error { return unix.Munmap(mem) }

// sendRegion hands the region's descriptor to the worker: one byte with the
// descriptor as SCM_RIGHTS, then closes the host's copy (the mapping keeps
// the memory).
func sendRegion(conn *net.UnixConn, fd int) error {
	defer unix.Close(fd)
	_, _, err := conn.WriteMsgUnix([]byte{1}, unix.UnixRights(fd), nil)
	return err
}
