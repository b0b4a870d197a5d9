//go:build !linux

package pluginrunner

import "net"

const sharedMemorySupported = false

func newSharedRegion(int, int64) (*sharedRegion, int, error) { return nil, -1, errNoSharedMemory }

func unmapRegion([]byte) error { return errNoSharedMemory }

func sendRegion(*net.UnixConn, int) error { return errNoSharedMemory }
