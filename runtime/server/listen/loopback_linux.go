package listen

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
)

// tcpSocketOwner finds the socket of this network namespace bound to
// local and connected to remote in /proc/net/tcp and /proc/net/tcp6, and
// returns its owner's uid.
func tcpSocketOwner(local, remote *net.TCPAddr) (uint32, error) {
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		uid, found, err := ownerIn(table, local, remote)
		if err != nil {
			return 0, err
		}
		if found {
			return uid, nil
		}
	}
	return 0, fmt.Errorf("%w: no socket %s -> %s in /proc/net/tcp{,6} (the client is in another network namespace, or has closed)", ErrPeerUnknown, local, remote)
}

func ownerIn(table string, local, remote *net.TCPAddr) (uid uint32, found bool, err error) {
	f, err := os.Open(table)
	if os.IsNotExist(err) {
		return 0, false, nil // no IPv6 in this kernel
	}
	if err != nil {
		return 0, false, fmt.Errorf("%w: %v", ErrPeerUnknown, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	for sc.Scan() {
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid ...
		fields := strings.Fields(sc.Text())
		if len(fields) < 8 {
			continue
		}
		if !procAddrIs(fields[1], local) || !procAddrIs(fields[2], remote) {
			continue
		}
		n, err := strconv.ParseUint(fields[7], 10, 32)
		if err != nil {
			return 0, false, fmt.Errorf("%w: %s: uid %q: %v", ErrPeerUnknown, table, fields[7], err)
		}
		return uint32(n), true, nil
	}
	if err := sc.Err(); err != nil {
		return 0, false, fmt.Errorf("%w: reading %s: %v", ErrPeerUnknown, table, err)
	}
	return 0, false, nil
}

// procAddrIs says whether a /proc/net/tcp address, "IP:PORT" in hex with
// the IP as 32-bit words in the host's byte order, is a.
func procAddrIs(field string, a *net.TCPAddr) bool {
	ipHex, portHex, ok := strings.Cut(field, ":")
	if !ok {
		return false
	}
	port, err := strconv.ParseUint(portHex, 16, 16)
	if err != nil || int(port) != a.Port {
		return false
	}
	raw, err := hex.DecodeString(ipHex)
	if err != nil || (len(raw) != net.IPv4len && len(raw) != net.IPv6len) {
		return false
	}
	ip := make(net.IP, len(raw))
	for i := 0; i < len(raw); i += 4 {
		binary.NativeEndian.PutUint32(ip[i:], binary.BigEndian.Uint32(raw[i:]))
	}
	return ip.Equal(a.IP)
}
