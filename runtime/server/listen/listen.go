package listen

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"

	"google.golang.org/grpc"
	"log/slog"
)

// Options says where the server listens and who may call it.
type Options struct {
	// Addr is unix://PATH, host:port, or "" for the default socket
	// (DefaultDir()/flinkgo.sock).
	Addr string
	// AllowGroup names a group (by name or gid) whose members may connect to
	// the Unix socket besides the server's user and root.
	AllowGroup string
	// TokenFile holds the bearer token of a TCP listener; "" for "token" in
	// DefaultDir(). It is generated (0600) when missing.
	TokenFile string
	// TLSCert and TLSKey turn TLS on for TCP; TLSClientCA makes it mutual.
	TLSCert, TLSKey, TLSClientCA string
	// Logger logs refused peers and calls; nil logs to stderr.
	Logger *slog.Logger
}

// Listener is an open listener with the gRPC options that guard it.
type Listener struct {
	net.Listener
	// Address is what clients dial: unix:///path or host:port.
	Address string
	// TokenFile is the file holding the token of a TCP listener; "" for a
	// Unix socket.
	TokenFile string
	// TokenCreated says this start generated the token file.
	TokenCreated bool
	// TLS says whether connections use TLS; ClientCerts whether they must
	// present a client certificate.
	TLS, ClientCerts bool

	serverOptions []grpc.ServerOption
}

// ServerOptions returns the options a grpc.Server serving l needs: the
// token interceptors and TLS credentials of a TCP listener.
func (l *Listener) ServerOptions() []grpc.ServerOption { return l.serverOptions }

// Open opens the listener o describes; see the package doc for the rules.
func Open(o Options) (*Listener, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if o.Addr == "" || strings.HasPrefix(o.Addr, "unix:") {
		if o.TLSCert != "" || o.TLSKey != "" || o.TLSClientCA != "" || o.TokenFile != "" {
			return nil, errors.New("--token-file and --tls-* apply to a TCP listener (--listen host:port); a Unix socket admits peers by their uid (--allow-group)")
		}
		path := strings.TrimPrefix(o.Addr, "unix://")
		if o.Addr != "" && (path == o.Addr || path == "") {
			return nil, fmt.Errorf("--listen %q: write a socket as unix:///absolute/path.sock", o.Addr)
		}
		return openUnix(path, o)
	}
	if o.AllowGroup != "" {
		return nil, errors.New("--allow-group applies to a Unix socket; TCP clients authenticate with the token")
	}
	return openTCP(o)
}
