package rest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/flinkgo/flinkgo/internal/logging"
	"github.com/flinkgo/flinkgo/runtime/server"
	"github.com/flinkgo/flinkgo/runtime/server/listen"
)

// Config keys the embedded runtime reads from its jobs (see
// Endpoints.FromConfig).
const (
	ConfigPort     = "rest.port"
	ConfigAddress  = "rest.address"
	ConfigToken    = "rest.auth-token"
	ConfigPromPort = "metrics.reporter.prom.port"
	// ConfigReadAccess is ReadAccessOwner (default) or ReadAccessAny.
	ConfigReadAccess = "rest.read-access"
	// ConfigAllowedHosts lists, comma-separated, the names a Host header
	// may carry besides IP literals and localhost.
	ConfigAllowedHosts = "rest.allowed-hosts"
)

// DefaultAddress is where the endpoints bind unless told otherwise.
const DefaultAddress = "127.0.0.1"

// Listen says which endpoints to serve.
type Listen struct {
	// Address is the host to bind, DefaultAddress when "". Any other than
	// a loopback address needs AuthToken (see Validate).
	Address string
	// RESTPort serves the REST API (and /metrics); PromPort the
	// Prometheus endpoint alone. 0 picks a free port; -1 serves none.
	RESTPort, PromPort int
	// AuthToken admits its bearer from anywhere; "" for none (then only
	// the local users of Peers are admitted, over loopback).
	AuthToken string
	// Peers are the local users admitted over loopback without the token
	// (the job service's: the server's user, root, --allow-group); nil for
	// the server's user and root.
	Peers *listen.PeerRule
	// ReadAccess is ReadAccessOwner ("" too) or ReadAccessAny.
	ReadAccess string
	// AllowedHosts are further names a Host header may carry.
	AllowedHosts []string
}

// Validate says why l cannot be served: a non-loopback address without a
// token, for either endpoint (off loopback no caller's user can be told,
// so only the token admits; without one, every read would be open or
// every call refused).
func (l Listen) Validate() error {
	if l.RESTPort < 0 && l.PromPort < 0 {
		return nil
	}
	if !isLoopbackHost(l.Address) && l.AuthToken == "" {
		return fmt.Errorf("%w (address %s)", errNoToken, l.Address)
	}
	return nil
}

// isLoopbackHost says whether host ("" for DefaultAddress) is a loopback
// address or localhost.
func isLoopbackHost(host string) bool {
	if host == "" || strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Endpoints are the HTTP servers of one runtime: the REST API and the
// Prometheus endpoint, each started at most once.
type Endpoints struct {
	srv *server.Server
	log *slog.Logger

	mu       sync.Mutex
	peers    *listen.PeerRule // the first Start's, for the later ones
	handler  *Handler
	servers  []*http.Server
	restAddr string // the REST API's bound address, "" when not serving
	promAddr string
	serving  sync.WaitGroup
}

// NewEndpoints returns the endpoints of srv's jobs, none serving yet.
func NewEndpoints(srv *server.Server, logger *slog.Logger) *Endpoints {
	return &Endpoints{srv: srv, log: logging.OrDiscard(logger)}
}

// Start serves what l asks for that is not served yet.
func (e *Endpoints) Start(l Listen) error {
	host := l.Address
	if host == "" {
		host = DefaultAddress
	}
	if err := l.Validate(); err != nil {
		return err
	}
	if !isLoopbackHost(host) && (l.RESTPort >= 0 || l.PromPort >= 0) {
		e.log.Warn("the REST API and metrics are served on a non-loopback address in clear (no TLS): the token travels readable by the network between the caller and this host", "address", host)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if l.Peers != nil && e.peers == nil {
		e.peers = l.Peers
	}
	l.Peers = e.peers
	hosts := append([]string{host}, l.AllowedHosts...)
	if l.RESTPort >= 0 && e.restAddr == "" {
		e.handler = New(Options{Server: e.srv, AuthToken: l.AuthToken, Peers: l.Peers, ReadAccess: l.ReadAccess, AllowedHosts: hosts, Logger: e.log})
		addr, err := e.serve(net.JoinHostPort(host, strconv.Itoa(l.RESTPort)), e.handler)
		if err != nil {
			return fmt.Errorf("rest: the REST API cannot listen: %w (rest.port / --rest-port)", err)
		}
		e.restAddr = addr
		e.log.Info("serving the REST API and the dashboard", "address", "http://"+addr+"/")
	}
	if l.PromPort >= 0 && e.promAddr == "" {
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", NewPrometheusHandler(e.srv))
		guarded := newAccess(l.AuthToken, l.Peers, l.ReadAccess, hosts, e.log).guard(redacting(e.srv, mux), func(*http.Request) bool { return false })
		addr, err := e.serve(net.JoinHostPort(host, strconv.Itoa(l.PromPort)), guarded)
		if err != nil {
			return fmt.Errorf("rest: the Prometheus endpoint cannot listen: %w (metrics.reporter.prom.port / --prom-port)", err)
		}
		e.promAddr = addr
		e.log.Info("serving Prometheus metrics", "address", "http://"+addr+"/metrics")
	}
	return nil
}

// serve listens on addr and serves h in the background. Call with e.mu
// held.
func (e *Endpoints) serve(addr string, h http.Handler) (string, error) {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return "", err
	}
	s := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	e.servers = append(e.servers, s)
	e.serving.Go(func() {
		if err := s.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			e.log.Warn("an HTTP endpoint stopped", "address", addr, "error", err)
		}
	})
	return lis.Addr().String(), nil
}

// Addresses returns the bound addresses of the REST API and the
// Prometheus endpoint, "" for one not served.
func (e *Endpoints) Addresses() (restAddr, promAddr string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.restAddr, e.promAddr
}

// FromConfig starts the endpoints a job's configuration asks for
// (rest.port, metrics.reporter.prom.port): the embedded runtime's
// server.SetEndpoints. A later job asking for another port than the one
// served is refused.
func (e *Endpoints) FromConfig(cfg map[string]string) error {
	l := Listen{Address: cfg[ConfigAddress], AuthToken: cfg[ConfigToken], RESTPort: -1, PromPort: -1, ReadAccess: cfg[ConfigReadAccess]}
	if l.ReadAccess != "" && l.ReadAccess != ReadAccessOwner && l.ReadAccess != ReadAccessAny {
		return fmt.Errorf("%s=%q: want %s or %s", ConfigReadAccess, l.ReadAccess, ReadAccessOwner, ReadAccessAny)
	}
	if hosts := cfg[ConfigAllowedHosts]; hosts != "" {
		l.AllowedHosts = strings.Split(hosts, ",")
	}
	for key, port := range map[string]*int{ConfigPort: &l.RESTPort, ConfigPromPort: &l.PromPort} {
		if v := cfg[key]; v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				return fmt.Errorf("%s=%q: want a port number", key, v)
			}
			*port = n
		}
	}
	if l.RESTPort < 0 && l.PromPort < 0 {
		return nil
	}
	restAddr, promAddr := e.Addresses()
	for _, c := range []struct {
		key, served string
		want        int
	}{{ConfigPort, restAddr, l.RESTPort}, {ConfigPromPort, promAddr, l.PromPort}} {
		if c.served == "" || c.want <= 0 {
			continue
		}
		if _, port, _ := net.SplitHostPort(c.served); port != strconv.Itoa(c.want) {
			return fmt.Errorf("%s=%d: this runtime serves it on %s already (one per runtime, started by its first job that asked)", c.key, c.want, c.served)
		}
	}
	return e.Start(l)
}

// Close stops the endpoints and the operations they started.
func (e *Endpoints) Close() {
	e.mu.Lock()
	servers, h := e.servers, e.handler
	e.servers = nil
	e.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, s := range servers {
		_ = s.Shutdown(ctx)
	}
	e.serving.Wait()
	if h != nil {
		h.Close()
	}
}
