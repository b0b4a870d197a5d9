package listen

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	grpcpeer "google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"log/slog"
)

// TokenName is the token file's name in the default directory.
const TokenName = "token"

// openTCP listens on host:port with the token check, and TLS when asked.
func openTCP(o Options) (*Listener, error) {
	host, _, err := net.SplitHostPort(o.Addr)
	if err != nil {
		return nil, fmt.Errorf("--listen %q is neither unix:///path nor host:port: %w", o.Addr, err)
	}
	tlsOn := o.TLSCert != "" || o.TLSKey != ""
	if (o.TLSCert == "") != (o.TLSKey == "") {
		return nil, errors.New("TLS needs both --tls-cert and --tls-key")
	}
	if o.TLSClientCA != "" && !tlsOn {
		return nil, errors.New("--tls-client-ca needs --tls-cert and --tls-key (mutual TLS is TLS)")
	}
	if !tlsOn {
		loopback, err := isLoopback(host)
		if err != nil {
			return nil, err
		}
		if !loopback {
			return nil, fmt.Errorf("--listen %s is not a loopback address, and the server does not take calls (or their tokens) from the network in clear: give --tls-cert and --tls-key (and --tls-client-ca for mutual TLS), or listen on 127.0.0.1 or localhost", o.Addr)
		}
	}
	l := &Listener{TLS: tlsOn, ClientCerts: o.TLSClientCA != ""}
	if tlsOn {
		cfg, err := serverTLS(o)
		if err != nil {
			return nil, err
		}
		l.serverOptions = append(l.serverOptions, grpc.Creds(credentials.NewTLS(cfg)))
	}
	l.TokenFile = o.TokenFile
	if l.TokenFile == "" {
		dir := DefaultDir()
		if err := privateDir(dir, -1); err != nil {
			return nil, err
		}
		l.TokenFile = filepath.Join(dir, TokenName)
	}
	if abs, err := filepath.Abs(l.TokenFile); err == nil {
		l.TokenFile = abs
	}
	token, created, err := loadToken(l.TokenFile)
	if err != nil {
		return nil, err
	}
	l.TokenCreated = created
	check := &tokenCheck{sum: sha256.Sum256([]byte(token)), file: l.TokenFile, log: o.Logger}
	l.serverOptions = append(l.serverOptions,
		grpc.ChainUnaryInterceptor(check.unary), grpc.ChainStreamInterceptor(check.stream))
	lis, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", o.Addr, err)
	}
	l.Listener = lis
	l.Address = lis.Addr().String() // the port that ":0" got
	return l, nil
}

// isLoopback says whether every address host names is a loopback one; ""
// (every interface) is not.
func isLoopback(host string) (bool, error) {
	if host == "" {
		return false, nil
	}
	if ip := net.ParseIP(host); ip != nil {
		return ip.IsLoopback(), nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupIPAddr(ctx, host)
	if err != nil {
		return false, fmt.Errorf("--listen: resolving %s: %w", host, err)
	}
	for _, a := range addrs {
		if !a.IP.IsLoopback() {
			return false, nil
		}
	}
	return len(addrs) > 0, nil
}

func serverTLS(o Options) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(o.TLSCert, o.TLSKey)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert %s / --tls-key %s: %w", o.TLSCert, o.TLSKey, err)
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}
	if o.TLSClientCA != "" {
		pem, err := os.ReadFile(o.TLSClientCA)
		if err != nil {
			return nil, fmt.Errorf("--tls-client-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--tls-client-ca %s holds no PEM certificate", o.TLSClientCA)
		}
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

// loadToken reads the token in path, or writes a new random one there
// (mode 0600) when there is no file. A file that others may read or write
// is refused.
func loadToken(path string) (token string, created bool, err error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err == nil {
		defer f.Close()
		var b [32]byte
		if _, err := rand.Read(b[:]); err != nil {
			return "", false, err
		}
		token = hex.EncodeToString(b[:])
		// O_CREATE's mode went through the umask; set it exactly.
		if err := f.Chmod(0o600); err != nil {
			return "", false, fmt.Errorf("the token file %s: %w", path, err)
		}
		if _, err := f.WriteString(token + "\n"); err != nil {
			return "", false, fmt.Errorf("writing the token file %s: %w", path, err)
		}
		if err := f.Close(); err != nil {
			return "", false, fmt.Errorf("writing the token file %s: %w", path, err)
		}
		return token, true, nil
	}
	if !errors.Is(err, fs.ErrExist) {
		return "", false, fmt.Errorf("creating the token file %s: %w", path, err)
	}
	token, err = ReadTokenFile(path)
	return token, false, err
}

// ReadTokenFile reads the token in the file at path: a regular file of
// this user or root that no one else may read, holding a non-empty token
// (surrounding space trimmed).
func ReadTokenFile(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("the token file %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("the token file %s is not a regular file", path)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return "", fmt.Errorf("the token file %s has mode %04o: others may read it; run chmod 600 %s", path, perm, path)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() && st.Uid != 0 {
		return "", fmt.Errorf("the token file %s belongs to uid %d, neither this user nor root", path, st.Uid)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("reading the token file %s: %w", path, err)
	}
	token := strings.TrimSpace(string(data))
	if token == "" {
		return "", fmt.Errorf("the token file %s is empty; remove it to have a token generated, or write one", path)
	}
	return token, nil
}

// tokenCheck admits calls that carry the token.
type tokenCheck struct {
	sum  [sha256.Size]byte // compared as hashes: equal length, constant time
	file string
	log  *slog.Logger
}

func (t *tokenCheck) check(ctx context.Context, method string) error {
	reason := "the call carries no token"
	if vals := metadata.ValueFromIncomingContext(ctx, "authorization"); len(vals) > 0 {
		got, ok := cutPrefixFold(vals[0], "bearer ")
		sum := sha256.Sum256([]byte(strings.TrimSpace(got)))
		if ok && subtle.ConstantTimeCompare(sum[:], t.sum[:]) == 1 {
			return nil
		}
		reason = "the call's token is wrong"
	}
	from := "unknown"
	if p, ok := grpcpeer.FromContext(ctx); ok {
		from = p.Addr.String()
	}
	t.log.Warn("refused a call without the server's token", "method", method, "peer", from, "reason", reason)
	return status.Errorf(codes.Unauthenticated,
		"flinkgo: %s; this server's token is in the file %s on the server's host: pass it with --token, --token-file or $FLINKGO_TOKEN (Python: Environment(token=...) or $FLINKGO_TOKEN)",
		reason, t.file)
}

func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix) {
		return s[len(prefix):], true
	}
	return s, false
}

func (t *tokenCheck) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if err := t.check(ctx, info.FullMethod); err != nil {
		return nil, err
	}
	return handler(ctx, req)
}

func (t *tokenCheck) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if err := t.check(ss.Context(), info.FullMethod); err != nil {
		return err
	}
	return handler(srv, ss)
}
