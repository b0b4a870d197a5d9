package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/flinkgo/flinkgo/internal/poll"
	"github.com/flinkgo/flinkgo/runtime/proto/jobpb"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
)

// In a subprocess the test binary is flinkgo itself ($cliEnv set), or a
// client that submits a job to the address in $submitEnv and exits 0 when
// the job service answered.
const (
	cliEnv    = "FLINKGO_TEST_AS_CLI"
	submitEnv = "FLINKGO_TEST_SUBMIT_TO"
)

func TestMain(m *testing.M) {
	if os.Getenv(cliEnv) != "" {
		main()
		os.Exit(0)
	}
	if addr := os.Getenv(submitEnv); addr != "" {
		if err := submit(addr); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// submit sends a (trivially failing) job and reads its first event.
func submit(addr string) error {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream, err := jobpb.NewJobServiceClient(conn).Execute(ctx, &jobpb.ExecuteRequest{Plan: &planpb.JobPlan{Name: "intruder"}})
	if err != nil {
		return err
	}
	_, err = stream.Recv()
	return err
}

// serveProcess is a `flinkgo serve` subprocess.
type serveProcess struct {
	cmd     *exec.Cmd
	address string
	stderr  *lockedBuffer
}

// lockedBuffer is the server's stderr, written by exec's goroutine.
type lockedBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startServe runs `flinkgo serve args...` with env added and waits for its
// ready line.
func startServe(t *testing.T, env []string, args ...string) *serveProcess {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"serve"}, args...)...)
	cmd.Env = append(append(os.Environ(), cliEnv+"=1"), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	s := &serveProcess{cmd: cmd, stderr: &lockedBuffer{}}
	cmd.Stderr = s.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		_ = cmd.Wait()
		t.Fatalf("no ready line: %v; stderr:\n%s", err, s.stderr)
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	s.address = strings.TrimSpace(strings.TrimPrefix(line, "flinkgo: serving on "))
	return s
}

// runAs runs the test binary with env (as the user nobody when asNobody)
// and returns its combined output and error.
func runAs(t *testing.T, asNobody bool, env []string, args ...string) (string, error) {
	t.Helper()
	bin := os.Args[0]
	if asNobody {
		if os.Geteuid() != 0 {
			t.Skip("needs root to run a client as another uid (nobody); run the tests as root to check that another user is kept out")
		}
		// The test binary sits in a private directory; nobody needs a copy.
		dir, err := os.MkdirTemp("", "flinkgo-serve-test-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(bin)
		if err != nil {
			t.Fatal(err)
		}
		bin = filepath.Join(dir, "flinkgo")
		if err := os.WriteFile(bin, data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	if asNobody {
		cmd.Dir = filepath.Dir(bin)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestAnotherUserCannotSubmitToTheDefaultServer(t *testing.T) {
	xdg := t.TempDir()
	s := startServe(t, []string{"XDG_RUNTIME_DIR=" + xdg})
	if !strings.HasPrefix(s.address, "unix://"+xdg) {
		t.Fatalf("the default server listens on %s, not on a socket in $XDG_RUNTIME_DIR", s.address)
	}
	if out, err := runAs(t, false, []string{submitEnv + "=" + s.address}); err != nil {
		t.Fatalf("the server's own user cannot submit: %v\n%s", err, out)
	}
	if out, err := runAs(t, true, []string{submitEnv + "=" + s.address}); err == nil {
		t.Fatalf("uid 65534 submitted a job to the default server:\n%s", out)
	}
}

func TestTCPServerNeedsTheToken(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	s := startServe(t, []string{"XDG_RUNTIME_DIR=" + dir}, "--listen", "127.0.0.1:0", "--token-file", tokenFile)
	// stderr is copied by its own goroutine: the line may trail the ready line.
	if !poll.Within(10*time.Second, func() bool { return strings.Contains(s.stderr.String(), tokenFile) }) {
		t.Fatalf("serve does not say where the token is:\n%s", s.stderr)
	}
	// A client that finds no token (its default token file is elsewhere).
	elsewhere := []string{cliEnv + "=1", "XDG_RUNTIME_DIR=" + t.TempDir()}
	out, err := runAs(t, false, elsewhere, "list", "--endpoint", s.address)
	if err == nil || !strings.Contains(out, "Unauthenticated") || !strings.Contains(out, tokenFile) {
		t.Fatalf("a client without the token: %v\n%s", err, out)
	}
	out, err = runAs(t, false, elsewhere, "list", "--endpoint", s.address, "--token", "wrong")
	if err == nil || !strings.Contains(out, "Unauthenticated") {
		t.Fatalf("a client with a wrong token: %v\n%s", err, out)
	}
	if out, err := runAs(t, false, elsewhere, "list", "--endpoint", s.address, "--token-file", tokenFile); err != nil {
		t.Fatalf("--token-file: %v\n%s", err, out)
	}
	token, err := os.ReadFile(tokenFile)
	if err != nil {
		t.Fatal(err)
	}
	env := append(elsewhere, "FLINKGO_TOKEN="+strings.TrimSpace(string(token)))
	if out, err := runAs(t, false, env, "list", "--endpoint", s.address); err != nil {
		t.Fatalf("$FLINKGO_TOKEN: %v\n%s", err, out)
	}
}

func TestServeRefusesNonLoopbackWithoutTLS(t *testing.T) {
	cmd := exec.Command(os.Args[0], "serve", "--listen", "0.0.0.0:0")
	cmd.Env = append(os.Environ(), cliEnv+"=1", "XDG_RUNTIME_DIR="+t.TempDir())
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// A server that started prints its ready line; one that refused ends.
	line, _ := bufio.NewReader(out).ReadString('\n')
	if line != "" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("serve on 0.0.0.0 without TLS started: %s", line)
	}
	err = cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || !strings.Contains(stderr.String(), "not a loopback address") || !strings.Contains(stderr.String(), "--tls-cert") {
		t.Fatalf("serve on 0.0.0.0 without TLS: %v\n%s", err, stderr)
	}
}

// serveOutput starts `flinkgo serve ARGS...` and returns its ready line
// ("" when it ended without one) and what it wrote to stderr; a server
// that started is stopped.
func serveOutput(t *testing.T, args ...string) (ready, stderr string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"serve"}, args...)...)
	cmd.Env = append(os.Environ(), cliEnv+"=1", "XDG_RUNTIME_DIR="+t.TempDir())
	errs := &lockedBuffer{}
	cmd.Stderr = errs
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready, _ = bufio.NewReader(out).ReadString('\n')
	if ready != "" {
		_ = cmd.Process.Signal(os.Interrupt)
	}
	_ = cmd.Wait()
	return ready, errs.String()
}

// The REST API and the Prometheus endpoint off loopback need a token
// (they were served with only a warning); a token given as an argument,
// which every user sees in ps, is warned about; --rest-auth-token-file
// gives one without it.
func TestServeRefusesRESTOffLoopbackWithoutAToken(t *testing.T) {
	for _, port := range []string{"--rest-port", "--prom-port"} {
		ready, stderr := serveOutput(t, "--rest-address", "0.0.0.0", port, "0")
		if ready != "" || !strings.Contains(stderr, "only with a token") {
			t.Errorf("serve --rest-address 0.0.0.0 %s 0 without a token: ready %q, stderr:\n%s", port, ready, stderr)
		}
	}
	ready, stderr := serveOutput(t, "--rest-port", "0", "--rest-auth-token", "visible")
	if ready == "" || !strings.Contains(stderr, "--rest-auth-token is visible to every user") {
		t.Errorf("serve --rest-auth-token: ready %q, no warning in:\n%s", ready, stderr)
	}
	file := filepath.Join(t.TempDir(), "rest-token")
	if err := os.WriteFile(file, []byte("from-a-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ready, stderr = serveOutput(t, "--rest-address", "0.0.0.0", "--rest-port", "0", "--rest-auth-token-file", file)
	if ready == "" || strings.Contains(stderr, "is visible to every user") {
		t.Errorf("serve --rest-auth-token-file off loopback: ready %q, stderr:\n%s", ready, stderr)
	}
}
