package listen

import (
	"errors"
	"fmt"
	"net"
)

// ErrPeerUnknown is wrapped by LoopbackPeerUID when it cannot tell who is
// at the other end: the connection is not a TCP one over loopback, or the
// OS does not say (only Linux's /proc/net/tcp does).
var ErrPeerUnknown = errors.New("listen: the peer's uid is unknown")

// LoopbackPeerUID returns the uid of the user whose socket is the client
// end of a TCP connection accepted over loopback, from local (the
// server's end) and remote (the client's). On Linux it is the owner that
// /proc/net/tcp (or tcp6) records for the socket bound to remote and
// connected to local: the kernel's record, which the client cannot
// choose. Call it while the connection is open: once the client closes
// its end, the entry may be gone.
func LoopbackPeerUID(local, remote *net.TCPAddr) (uint32, error) {
	if local == nil || remote == nil {
		return 0, fmt.Errorf("%w: not a TCP connection", ErrPeerUnknown)
	}
	if !remote.IP.IsLoopback() {
		return 0, fmt.Errorf("%w: %s is not on loopback", ErrPeerUnknown, remote)
	}
	return tcpSocketOwner(remote, local)
}
