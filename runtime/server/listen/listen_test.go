package listen

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"io/fs"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"log/slog"
)

// helperEnv makes the test binary a client that calls the health service
// at the address in it and exits 0 when the call succeeds, 1 otherwise.
const helperEnv = "FLINKGO_LISTEN_TEST_CLIENT"

func TestMain(m *testing.M) {
	if addr := os.Getenv(helperEnv); addr != "" {
		if err := healthCall(addr, grpc.WithTransportCredentials(insecure.NewCredentials())); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func healthCall(addr string, opts ...grpc.DialOption) error {
	return healthCallCtx(context.Background(), addr, opts...)
}

func healthCallCtx(ctx context.Context, addr string, opts ...grpc.DialOption) error {
	target := addr
	if !strings.HasPrefix(addr, "unix://") {
		target = "passthrough:///" + addr
	}
	conn, err := grpc.NewClient(target, opts...)
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err = healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	return err
}

// syncBuffer is a log sink the server's goroutines write to.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// serveHealth opens o and serves the health service on it.
func serveHealth(t *testing.T, o Options) (*Listener, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	o.Logger = slog.New(slog.NewTextHandler(logs, nil))
	l, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(l.ServerOptions()...)
	healthpb.RegisterHealthServer(srv, health.NewServer())
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(srv.Stop)
	return l, logs
}

func TestDefaultSocketIsPrivate(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	old := syscall.Umask(0) // a careless umask must not widen anything
	defer syscall.Umask(old)
	l, _ := serveHealth(t, Options{})
	path := strings.TrimPrefix(l.Address, "unix://")
	if path != filepath.Join(DefaultDir(), SocketName) {
		t.Fatalf("address %s, want the default socket", l.Address)
	}
	for name, want := range map[string]fs.FileMode{DefaultDir(): 0o700, path: 0o600} {
		fi, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s has mode %04o, want %04o", name, got, want)
		}
	}
	if err := healthCall(l.Address, grpc.WithTransportCredentials(insecure.NewCredentials())); err != nil {
		t.Fatalf("the server's own user was refused: %v", err)
	}
}

func TestDefaultDirOfOthersOrWiderIsRefused(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	if err := os.Mkdir(DefaultDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(DefaultDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(Options{}); err == nil || !strings.Contains(err.Error(), "wider than 0700") {
		t.Fatalf("a 0755 directory: got %v, want a refusal", err)
	}
	if os.Geteuid() != 0 {
		t.Log("not root: the directory of another owner is not tried")
		return
	}
	if err := os.Chmod(DefaultDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(DefaultDir(), 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(Options{}); err == nil || !strings.Contains(err.Error(), "belongs to uid 65534") {
		t.Fatalf("a directory of another owner: got %v, want a refusal", err)
	}
}

func TestOnlyAStaleSocketIsRemoved(t *testing.T) {
	dir := t.TempDir()

	file := filepath.Join(dir, "not-a-socket")
	if err := os.WriteFile(file, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(Options{Addr: "unix://" + file}); err == nil || !strings.Contains(err.Error(), "is not a socket") {
		t.Fatalf("a regular file: got %v, want a refusal", err)
	}
	if data, err := os.ReadFile(file); err != nil || string(data) != "precious" {
		t.Fatalf("the file was touched: %q, %v", data, err)
	}

	live := filepath.Join(dir, "live.sock")
	serveHealth(t, Options{Addr: "unix://" + live})
	if _, err := Open(Options{Addr: "unix://" + live}); err == nil || !strings.Contains(err.Error(), "another server is listening") {
		t.Fatalf("a socket in use: got %v, want a refusal", err)
	}
	if err := healthCall("unix://"+live, grpc.WithTransportCredentials(insecure.NewCredentials())); err != nil {
		t.Fatalf("the first server lost its socket: %v", err)
	}

	stale := filepath.Join(dir, "stale.sock")
	old, err := net.ListenUnix("unix", &net.UnixAddr{Name: stale, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	old.SetUnlinkOnClose(false)
	old.Close() // the socket file stays, nobody answers: a crashed server's
	l, _ := serveHealth(t, Options{Addr: "unix://" + stale})
	if err := healthCall(l.Address, grpc.WithTransportCredentials(insecure.NewCredentials())); err != nil {
		t.Fatalf("serving on the stale socket's path: %v", err)
	}
}

// openDir returns a new directory that every user may enter (t.TempDir's
// parent is private).
func openDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "flinkgo-listen-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// asNobody runs the test binary as the user nobody, as a client of addr.
func asNobody(t *testing.T, addr string) (ok bool, output string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a client as another uid (nobody); run the tests as root to check the peer-uid refusal")
	}
	// The test binary sits in a private directory; nobody needs a copy.
	dir := openDir(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "client")
	src, err := os.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(bin, os.O_WRONLY|os.O_CREATE, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	dst.Close()
	cmd := exec.Command(bin)
	cmd.Env = []string{helperEnv + "=" + addr}
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	return err == nil, string(out)
}

func TestAnotherUidIsRefusedBySO_PEERCRED(t *testing.T) {
	// A socket that the file system lets anyone reach (as a careless
	// --listen path would): the uid check alone must keep others out.
	path := filepath.Join(openDir(t), "open.sock")
	l, logs := serveHealth(t, Options{Addr: "unix://" + path})
	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
	if ok, out := asNobody(t, l.Address); ok {
		t.Fatalf("uid 65534 called the server: %s", out)
	}
	if !strings.Contains(logs.String(), "refused a connection") || !strings.Contains(logs.String(), "peer_uid=65534") {
		t.Fatalf("no log line for the refused peer: %q", logs.String())
	}
	if err := healthCall(l.Address, grpc.WithTransportCredentials(insecure.NewCredentials())); err != nil {
		t.Fatalf("the server's own user was refused: %v", err)
	}
}

func TestAllowGroupAdmitsItsMembers(t *testing.T) {
	path := filepath.Join(openDir(t), "group.sock")
	l, _ := serveHealth(t, Options{Addr: "unix://" + path, AllowGroup: "65534"})
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o660 || fi.Sys().(*syscall.Stat_t).Gid != 65534 {
		t.Fatalf("socket mode %04o gid %d, want 0660 and the group's", fi.Mode().Perm(), fi.Sys().(*syscall.Stat_t).Gid)
	}
	if ok, out := asNobody(t, l.Address); !ok {
		t.Fatalf("a member of the allowed group was refused: %s", out)
	}
}

func TestTCPNeedsTheToken(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "token")
	old := syscall.Umask(0)
	l, logs := serveHealth(t, Options{Addr: "127.0.0.1:0", TokenFile: tokenFile})
	syscall.Umask(old)
	if !l.TokenCreated || l.TokenFile != tokenFile {
		t.Fatalf("token file %s created %v, want %s generated", l.TokenFile, l.TokenCreated, tokenFile)
	}
	fi, err := os.Stat(tokenFile)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file mode %04o, want 0600", fi.Mode().Perm())
	}
	data, err := os.ReadFile(tokenFile)
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(string(data))
	addr := l.Addr().String()
	plain := grpc.WithTransportCredentials(insecure.NewCredentials())

	for name, ctx := range map[string]context.Context{
		"no token":    context.Background(),
		"wrong token": metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer x"+token[1:]),
	} {
		err := healthCallCtx(ctx, addr, plain)
		if status.Code(err) != codes.Unauthenticated {
			t.Fatalf("%s: got %v, want UNAUTHENTICATED", name, err)
		}
		msg := status.Convert(err).Message()
		if !strings.Contains(msg, tokenFile) || strings.Contains(msg, token) {
			t.Fatalf("%s: the message must name the token file and not hold the token: %q", name, msg)
		}
	}
	if !strings.Contains(logs.String(), "refused a call") {
		t.Fatalf("no log line for the refused calls: %q", logs.String())
	}
	ok := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+token)
	if err := healthCallCtx(ok, addr, plain); err != nil {
		t.Fatalf("the right token was refused: %v", err)
	}

	// Streams are checked too.
	conn, err := grpc.NewClient("passthrough:///"+addr, plain)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	watch, err := healthpb.NewHealthClient(conn).Watch(context.Background(), &healthpb.HealthCheckRequest{})
	if err == nil {
		_, err = watch.Recv()
	}
	if status.Code(err) != codes.Unauthenticated {
		t.Fatalf("a stream without the token: got %v, want UNAUTHENTICATED", err)
	}

	// A second start reads the same token.
	l2, _ := serveHealth(t, Options{Addr: "127.0.0.1:0", TokenFile: tokenFile})
	if l2.TokenCreated {
		t.Fatal("the second start made a new token")
	}
	if err := healthCallCtx(ok, l2.Addr().String(), plain); err != nil {
		t.Fatalf("the token of the first start was refused by the second: %v", err)
	}
}

func TestTokenFileReadableByOthersIsRefused(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(tokenFile, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(Options{Addr: "127.0.0.1:0", TokenFile: tokenFile}); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("got %v, want a refusal of the 0644 token file", err)
	}
}

func TestNonLoopbackNeedsTLS(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "token")
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0"} {
		if _, err := Open(Options{Addr: addr, TokenFile: tokenFile}); err == nil || !strings.Contains(err.Error(), "not a loopback address") {
			t.Fatalf("%s without TLS: got %v, want a refusal", addr, err)
		}
	}
	for _, addr := range []string{"127.0.0.1:0", "localhost:0"} {
		l, err := Open(Options{Addr: addr, TokenFile: tokenFile})
		if err != nil {
			t.Fatalf("%s: %v", addr, err)
		}
		l.Close()
	}
	pki := newPKI(t)
	l, err := Open(Options{Addr: "0.0.0.0:0", TokenFile: tokenFile, TLSCert: pki.serverCert, TLSKey: pki.serverKey})
	if err != nil {
		t.Fatalf("0.0.0.0 with TLS: %v", err)
	}
	l.Close()
}

func TestMutualTLS(t *testing.T) {
	pki := newPKI(t)
	tokenFile := filepath.Join(t.TempDir(), "token")
	l, _ := serveHealth(t, Options{
		Addr: "127.0.0.1:0", TokenFile: tokenFile,
		TLSCert: pki.serverCert, TLSKey: pki.serverKey, TLSClientCA: pki.caFile,
	})
	data, err := os.ReadFile(tokenFile)
	if err != nil {
		t.Fatal(err)
	}
	ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+strings.TrimSpace(string(data)))
	addr := l.Addr().String()

	withCert := &tls.Config{RootCAs: pki.pool, Certificates: []tls.Certificate{pki.client}, MinVersion: tls.VersionTLS12}
	if err := healthCallCtx(ctx, addr, grpc.WithTransportCredentials(credentials.NewTLS(withCert))); err != nil {
		t.Fatalf("a client with a certificate of the CA was refused: %v", err)
	}
	without := &tls.Config{RootCAs: pki.pool, MinVersion: tls.VersionTLS12}
	if err := healthCallCtx(ctx, addr, grpc.WithTransportCredentials(credentials.NewTLS(without))); err == nil {
		t.Fatal("a client without a certificate got through")
	}
	if err := healthCallCtx(ctx, addr, grpc.WithTransportCredentials(insecure.NewCredentials())); err == nil {
		t.Fatal("a client without TLS got through")
	}
	old := &tls.Config{RootCAs: pki.pool, Certificates: []tls.Certificate{pki.client}, MaxVersion: tls.VersionTLS11}
	if err := healthCallCtx(ctx, addr, grpc.WithTransportCredentials(credentials.NewTLS(old))); err == nil {
		t.Fatal("a TLS 1.1 client got through")
	}
}

// pki is a test CA with a server certificate for 127.0.0.1 and a client
// certificate.
type pki struct {
	caFile, serverCert, serverKey string
	pool                          *x509.CertPool
	client                        tls.Certificate
}

func newPKI(t *testing.T) *pki {
	t.Helper()
	dir := t.TempDir()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "flinkgo test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	issue := func(serial int64, usage x509.ExtKeyUsage) (certPEM, keyPEM []byte) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "flinkgo test"},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
			IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		keyDER, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
			pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	}
	write := func(name string, data []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	p := &pki{pool: x509.NewCertPool()}
	p.pool.AddCert(ca)
	p.caFile = write("ca.pem", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}))
	sc, sk := issue(2, x509.ExtKeyUsageServerAuth)
	p.serverCert, p.serverKey = write("server.pem", sc), write("server-key.pem", sk)
	cc, ck := issue(3, x509.ExtKeyUsageClientAuth)
	p.client, err = tls.X509KeyPair(cc, ck)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
