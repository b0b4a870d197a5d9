//go:build !linux

package listen

import (
	"fmt"
	"net"
)

// tcpSocketOwner is Linux's alone (/proc/net/tcp): elsewhere the REST API
// admits callers by its token only.
func tcpSocketOwner(local, remote *net.TCPAddr) (uint32, error) {
	return 0, fmt.Errorf("%w: only Linux tells the owner of a loopback TCP socket (/proc/net/tcp); use the REST token (rest.auth-token)", ErrPeerUnknown)
}
