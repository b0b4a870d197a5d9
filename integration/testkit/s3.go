package testkit

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// S3Server is a real S3 API server on loopback: moto's server (PyPI
// moto[server], which `make setup` installs into .venv). moto speaks the
// S3 REST API over HTTP, multipart uploads and conditional puts included,
// so the tests run the real aws-sdk-go-v2 client against it.
//
// Clients reach it through a loopback TCP proxy, so that a test can cut
// the store off (Outage: connections refused and reset) and bring it back
// (Recover) without losing what the server holds, as moto keeps its
// objects in memory.
type S3Server struct {
	t        testing.TB
	python   string
	port     int // moto's
	cmd      *exec.Cmd
	out      bytes.Buffer
	proxy    *tcpProxy
	Endpoint string // http://127.0.0.1:PORT of the proxy
}

// S3 credentials moto accepts (any do); the tests pass them as config.
const (
	S3AccessKey = "testing"
	S3SecretKey = "testing"
	S3Region    = "us-east-1"
)

// StartS3 starts a moto S3 server on a free loopback port and stops it at
// the end of the test. Without .venv (or moto in it) the test is skipped
// with a message saying how to run it, or fails when
// $FLINKGO_REQUIRE_PYTHON is 1.
func StartS3(t testing.TB) *S3Server {
	t.Helper()
	py := Python(t)
	if out, err := exec.Command(py, "-c", "import moto.server, flask").CombinedOutput(); err != nil {
		msg := fmt.Sprintf("testkit: this test needs moto[server] in %s (%v: %s). Run `make setup` again "+
			"(python/pyproject.toml's test extras list it).", py, err, bytes.TrimSpace(out))
		if os.Getenv(RequirePythonEnv) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	s := &S3Server{t: t, python: py, port: port}
	s.start()
	t.Cleanup(s.stop)
	p, err := newTCPProxy("127.0.0.1:" + strconv.Itoa(port))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.close)
	s.proxy = p
	s.Endpoint = "http://" + p.addr
	return s
}

// start starts moto and waits until it answers.
func (s *S3Server) start() {
	s.t.Helper()
	if s.cmd != nil {
		s.t.Fatal("testkit: S3 server already running")
	}
	s.out.Reset()
	cmd := exec.Command(s.python, "-m", "moto.server", "-H", "127.0.0.1", "-p", strconv.Itoa(s.port))
	cmd.Stdout, cmd.Stderr = &s.out, &s.out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("testkit: starting moto: %v", err)
	}
	s.cmd = cmd
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(s.port) + "/moto-api/")
		if err == nil {
			_ = resp.Body.Close()
			return
		}
		if time.Now().After(deadline) || !Alive(cmd.Process.Pid) {
			s.stop()
			s.t.Fatalf("testkit: moto server on port %d did not answer: %v\n%s", s.port, err, s.out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Outage cuts the store off: the proxy stops listening and resets the open
// connections, so requests fail as against a stopped server.
func (s *S3Server) Outage() { s.proxy.stop() }

// Recover ends an Outage: the proxy listens again on the same address.
func (s *S3Server) Recover() {
	s.t.Helper()
	if err := s.proxy.listen(); err != nil {
		s.t.Fatalf("testkit: S3 proxy cannot listen again on %s: %v", s.proxy.addr, err)
	}
}

// stop kills moto and waits for it to exit.
func (s *S3Server) stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
}

// tcpProxy forwards loopback connections to target until stopped.
type tcpProxy struct {
	target string
	addr   string
	mu     sync.Mutex
	ln     net.Listener
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
}

func newTCPProxy(target string) (*tcpProxy, error) {
	p := &tcpProxy{target: target, addr: "127.0.0.1:0", conns: map[net.Conn]struct{}{}}
	if err := p.listen(); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *tcpProxy) listen() error {
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.ln, p.addr = ln, ln.Addr().String()
	p.mu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				p.forward(c)
			}()
		}
	}()
	return nil
}

func (p *tcpProxy) track(c net.Conn, add bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !add {
		delete(p.conns, c)
		return true
	}
	if p.ln == nil {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *tcpProxy) forward(c net.Conn) {
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = c.Close()
		return
	}
	if !p.track(c, true) || !p.track(up, true) {
		_ = c.Close()
		_ = up.Close()
		return
	}
	defer p.track(c, false)
	defer p.track(up, false)
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done
	_ = c.Close()
	_ = up.Close()
	<-done
}

// stop closes the listener and every forwarded connection.
func (p *tcpProxy) stop() {
	p.mu.Lock()
	if p.ln != nil {
		_ = p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
}

func (p *tcpProxy) close() {
	p.stop()
	p.wg.Wait()
}
