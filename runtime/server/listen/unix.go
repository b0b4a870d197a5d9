package listen

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"

	"log/slog"
)

// SocketName is the socket's name in the default directory.
const SocketName = "flinkgo.sock"

// DefaultDir returns the server's private directory: $XDG_RUNTIME_DIR/flinkgo
// when that is set, else flinkgo-<uid> under the temp dir. It holds the
// default socket and the default token file.
func DefaultDir() string {
	if d := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(d) {
		return filepath.Join(d, "flinkgo")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("flinkgo-%d", os.Geteuid()))
}

// DefaultAddress is the address of the default socket, unix:///....
func DefaultAddress() string { return "unix://" + filepath.Join(DefaultDir(), SocketName) }

// privateDir creates dir (mode 0700, or 0710 with its group set to gid
// when gid >= 0, so that the group can reach the socket) or checks that an
// existing one is a directory of ours no wider than that mode. A directory
// of another owner, or with wider access, is refused, never used: someone
// else could have put a socket or a token file there.
func privateDir(dir string, gid int) error {
	want := fs.FileMode(0o700)
	if gid >= 0 {
		want = 0o710
	}
	created := true
	if err := os.Mkdir(dir, want); errors.Is(err, fs.ErrExist) {
		created = false
	} else if err != nil {
		return fmt.Errorf("creating the server's directory: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("the server's directory: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s, the server's directory, is not a directory (a %s); remove it, or set --listen", dir, fi.Mode().Type())
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("cannot tell the owner of %s, the server's directory", dir)
	}
	if int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("%s, the server's directory, belongs to uid %d, not to this user (uid %d): someone else made it, so its socket and token cannot be trusted; remove it as its owner or root, or set --listen and --token-file", dir, st.Uid, os.Geteuid())
	}
	if perm := fi.Mode().Perm(); perm&^want != 0 {
		return fmt.Errorf("%s, the server's directory, has mode %04o, wider than %04o: others could reach or replace the socket and token in it; run chmod %o %s (and check what is in it), then start again", dir, perm, want, want, dir)
	}
	// Mkdir's mode went through the umask; set it exactly.
	if err := os.Chmod(dir, want); err != nil {
		return fmt.Errorf("setting the mode of %s: %w", dir, err)
	}
	if gid >= 0 && (created || int(st.Gid) != gid) {
		if err := os.Lchown(dir, -1, gid); err != nil {
			return fmt.Errorf("giving %s to the group of --allow-group (gid %d): %w; the server's user must be a member of that group", dir, gid, err)
		}
	}
	return nil
}

// openUnix listens on the socket path ("" for the default one) and checks
// every peer's uid.
func openUnix(path string, o Options) (*Listener, error) {
	rule := peerRule{uid: uint32(os.Geteuid()), gid: -1}
	if o.AllowGroup != "" {
		g, err := lookupGroup(o.AllowGroup)
		if err != nil {
			return nil, err
		}
		rule.gid, rule.group = g, o.AllowGroup
	}
	if path == "" {
		dir := DefaultDir()
		if err := privateDir(dir, rule.gid); err != nil {
			return nil, err
		}
		path = filepath.Join(dir, SocketName)
	}
	if !filepath.IsAbs(path) {
		abs, err := filepath.Abs(path)
		if err != nil {
			return nil, err
		}
		path = abs
	}
	if err := removeStale(path); err != nil {
		return nil, err
	}
	lis, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", path, err)
	}
	// The umask decided the socket's mode; set it. Peers are checked by
	// uid either way, so a connection made before the chmod gains nothing.
	mode := fs.FileMode(0o600)
	if rule.gid >= 0 {
		mode = 0o660
		if err := os.Chown(path, -1, rule.gid); err != nil {
			lis.Close()
			return nil, fmt.Errorf("giving the socket %s to the group %s: %w; the server's user must be a member of it", path, rule.group, err)
		}
	}
	if err := os.Chmod(path, mode); err != nil {
		lis.Close()
		return nil, fmt.Errorf("setting the mode of the socket %s: %w", path, err)
	}
	return &Listener{
		Listener: &peerChecked{UnixListener: lis, rule: rule, log: o.Logger},
		Address:  "unix://" + path,
	}, nil
}

// removeStale removes path when it is a socket nobody answers on; it is an
// error when path is anything else, or a socket in use.
func removeStale(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("--listen %s: %w", path, err)
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("--listen %s: the path exists and is not a socket (mode %s); flinkgo removes only a stale socket: pick another path or remove it yourself", path, fi.Mode())
	}
	conn, err := net.DialTimeout("unix", path, 2*time.Second)
	if err == nil {
		conn.Close()
		return fmt.Errorf("--listen %s: another server is listening on this socket; stop it or pick another path", path)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("--listen %s: a socket is there and it cannot be told whether it is in use (%v); not removing it: pick another path or remove it yourself", path, err)
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("removing the stale socket %s: %w", path, err)
	}
	return nil
}

func lookupGroup(name string) (int, error) {
	g, err := user.LookupGroup(name)
	if err != nil {
		g, err = user.LookupGroupId(name)
	}
	if err != nil {
		return 0, fmt.Errorf("--allow-group %s: no such group", name)
	}
	return strconv.Atoi(g.Gid)
}

// peer is who is at the other end of a Unix socket connection.
type peer struct {
	pid      int32 // -1 when the OS does not say
	uid, gid uint32
}

// peerRule admits the server's uid, root, and the members of a group.
type peerRule struct {
	uid   uint32
	gid   int // -1: no group
	group string
}

func (r peerRule) allows(p peer) bool {
	if p.uid == r.uid || p.uid == 0 {
		return true
	}
	if r.gid < 0 {
		return false
	}
	if int(p.gid) == r.gid {
		return true
	}
	u, err := user.LookupId(strconv.FormatUint(uint64(p.uid), 10))
	if err != nil {
		return false
	}
	ids, err := u.GroupIds()
	return err == nil && slices.Contains(ids, strconv.Itoa(r.gid))
}

func (r peerRule) String() string {
	if r.gid < 0 {
		return fmt.Sprintf("only uid %d (the server's) and root may connect; start the server with --allow-group GROUP to admit a group", r.uid)
	}
	return fmt.Sprintf("only uid %d (the server's), root and the group %s may connect", r.uid, r.group)
}

// peerChecked is a Unix listener whose Accept returns only connections of
// peers the rule admits; it closes the others.
type peerChecked struct {
	*net.UnixListener
	rule peerRule
	log  *slog.Logger
}

func (l *peerChecked) Accept() (net.Conn, error) {
	for {
		c, err := l.AcceptUnix()
		if err != nil {
			return nil, err
		}
		p, err := peerCred(c)
		if err == nil && l.rule.allows(p) {
			return c, nil
		}
		if err != nil {
			l.log.Warn("refused a connection: the peer's credentials are unknown", "socket", l.Addr().String(), "error", err)
		} else {
			l.log.Warn("refused a connection to the job service", "socket", l.Addr().String(), "peer_uid", p.uid, "peer_gid", p.gid, "peer_pid", p.pid, "rule", l.rule.String())
		}
		c.Close()
	}
}
