package listen

import (
	"net"
	"syscall"
)

// peerCred reads the peer's pid, uid and gid with SO_PEERCRED: the
// credentials the kernel recorded when the peer connected.
func peerCred(c *net.UnixConn) (peer, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return peer{}, err
	}
	var cred *syscall.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil {
		return peer{}, err
	}
	if credErr != nil {
		return peer{}, credErr
	}
	return peer{pid: cred.Pid, uid: cred.Uid, gid: cred.Gid}, nil
}
