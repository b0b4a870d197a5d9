package listen

import (
	"net"

	"golang.org/x/sys/unix"
)

// peerCred reads the peer's uid and gid with LOCAL_PEERCRED: the
// credentials the kernel recorded when the peer connected.
func peerCred(c *net.UnixConn) (peer, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return peer{}, err
	}
	var cred *unix.Xucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptXucred(int(fd), unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
	}); err != nil {
		return peer{}, err
	}
	if credErr != nil {
		return peer{}, credErr
	}
	p := peer{pid: -1, uid: cred.Uid}
	if cred.Ngroups > 0 {
		p.gid = cred.Groups[0]
	}
	return p, nil
}
