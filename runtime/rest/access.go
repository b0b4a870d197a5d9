package rest

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"

	"github.com/flinkgo/flinkgo/runtime/server/listen"
)

// Values of rest.read-access.
const (
	// ReadAccessOwner (the default): reads that show jobs follow the rule
	// of mutating calls.
	ReadAccessOwner = "owner"
	// ReadAccessAny: anyone who reaches the port may read the jobs (for a
	// monitoring system that runs as another user and sends no token).
	ReadAccessAny = "any"
)

// access decides who may make a call, for the REST API and the
// Prometheus endpoint alike. A caller is admitted when it carries the
// bearer token, or when it comes over loopback from a user the peer rule
// admits (the users who may submit jobs on the job service's socket: the
// server's own, root, --allow-group's members), told by the owner of its
// socket (listen.LoopbackPeerUID). Mutating calls always need that; reads
// that show jobs too unless readAny. Before that, the Host header must be
// one of this server's names (against DNS rebinding), and a mutating call
// must not come from another origin and must send its body as JSON
// (against cross-site requests, which a browser makes with its user's
// loopback identity).
type access struct {
	token   string
	rule    listen.PeerRule
	readAny bool
	// hosts are the names (lowercase) a Host header may carry besides IP
	// literals and localhost: the listen address and rest.allowed-hosts.
	hosts map[string]bool
	log   *slog.Logger
}

// newAccess returns the rules of a server with token ("" for none),
// peers (nil: the server's user and root), readAccess (ReadAccessOwner,
// "" or ReadAccessAny) and allowedHosts.
func newAccess(token string, peers *listen.PeerRule, readAccess string, allowedHosts []string, log *slog.Logger) *access {
	a := &access{token: token, readAny: readAccess == ReadAccessAny, hosts: map[string]bool{}, log: log}
	if peers != nil {
		a.rule = *peers
	} else {
		a.rule, _ = listen.NewPeerRule("") // no group: cannot fail
	}
	for _, h := range allowedHosts {
		if h = strings.TrimSpace(h); h != "" {
			a.hosts[strings.ToLower(hostName(h))] = true
		}
	}
	return a
}

// guard serves next behind the access rules; public says which reads
// anyone may make (the dashboard's files, the cluster's /config).
func (a *access) guard(next http.Handler, public func(*http.Request) bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if host := hostName(r.Host); !a.hostAllowed(host) {
			a.log.Warn("REST call refused: a foreign Host header", "host", r.Host, "method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr)
			writeError(w, http.StatusMisdirectedRequest, fmt.Sprintf("Host %q is not a name of this server: use its IP address or localhost, or add the name to rest.allowed-hosts (--rest-allowed-hosts)", r.Host))
			return
		}
		mutating := r.Method != http.MethodGet && r.Method != http.MethodHead && r.Method != http.MethodOptions
		if mutating || (!a.readAny && !public(r)) {
			if why, ok := a.admits(r); !ok {
				a.refuse(w, r, mutating, why)
				return
			}
		}
		if mutating {
			if why := crossSite(r); why != "" {
				a.log.Warn("REST call refused: a cross-site request", "method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr, "reason", why)
				writeError(w, http.StatusForbidden, "this call changes a job and "+why+": the REST API takes such calls only from its own pages and from clients that are not browsers")
				return
			}
			if r.ContentLength != 0 {
				if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
					writeError(w, http.StatusUnsupportedMediaType, fmt.Sprintf("the body of %s %s must be JSON sent as \"Content-Type: application/json\", not %q", r.Method, r.URL.Path, r.Header.Get("Content-Type")))
					return
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// admits says whether r's caller may make the call, and else why not.
func (a *access) admits(r *http.Request) (why string, ok bool) {
	if auth := r.Header.Get("Authorization"); auth != "" && a.token != "" {
		got, isBearer := strings.CutPrefix(auth, "Bearer ")
		if isBearer && subtle.ConstantTimeCompare([]byte(got), []byte(a.token)) == 1 {
			return "", true
		}
		return "its bearer token is wrong", false
	}
	uid, err := peerUID(r)
	if err != nil {
		if a.token == "" {
			return fmt.Sprintf("the caller's user cannot be told (%v) and this server has no REST token (rest.auth-token) to check instead", err), false
		}
		return fmt.Sprintf("it carries no bearer token and the caller's user cannot be told (%v)", err), false
	}
	if !a.rule.AllowsUID(uid) {
		return fmt.Sprintf("it comes from uid %d and carries no bearer token; %s", uid, a.rule), false
	}
	return "", true
}

// refuse answers 401 with what the caller may do about it.
func (a *access) refuse(w http.ResponseWriter, r *http.Request, mutating bool, why string) {
	a.log.Warn("REST call refused", "method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr, "reason", why)
	what := "this call changes a job"
	if !mutating {
		what = "this call shows the jobs (rest.read-access: any opens reads to everyone who reaches the port)"
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="flinkgo"`)
	writeError(w, http.StatusUnauthorized, fmt.Sprintf("%s, and %s: make it as the server's user on the same host over loopback, or with the REST token (rest.auth-token) as \"Authorization: Bearer <token>\"", what, why))
}

// peerUID returns the uid of the user whose socket made r over loopback.
func peerUID(r *http.Request) (uint32, error) {
	local, _ := r.Context().Value(http.LocalAddrContextKey).(*net.TCPAddr)
	remote, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil || local == nil {
		return 0, fmt.Errorf("%w: the connection %s is not TCP", listen.ErrPeerUnknown, r.RemoteAddr)
	}
	return listen.LoopbackPeerUID(local, net.TCPAddrFromAddrPort(remote))
}

// hostAllowed says whether a Host header's name is one of this server's:
// an IP literal (a DNS rebinding attack needs a name it controls),
// localhost, or a configured name. An empty Host (HTTP/1.0) names none.
func (a *access) hostAllowed(host string) bool {
	if host == "" || strings.EqualFold(host, "localhost") {
		return true
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return true
	}
	return a.hosts[strings.ToLower(host)]
}

// hostName is the name in a Host header, without port and brackets.
func hostName(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return strings.TrimSuffix(strings.TrimPrefix(hostport, "["), "]")
}

// crossSite says why a browser's request comes from another origin than
// the server's own pages, or "" when it does not: its Origin names
// another scheme, host or port than the request's Host, or (without an
// Origin) the browser's Sec-Fetch-Site says so. Clients that are not
// browsers send neither header.
func crossSite(r *http.Request) string {
	if origin := r.Header.Get("Origin"); origin != "" {
		u, err := url.Parse(origin)
		if err != nil || u.Scheme != "http" || !strings.EqualFold(u.Host, r.Host) {
			return fmt.Sprintf("comes from the origin %q, not from this server's (http://%s)", origin, r.Host)
		}
		return ""
	}
	switch site := r.Header.Get("Sec-Fetch-Site"); site {
	case "cross-site", "same-site":
		return "the browser says it comes from another site (Sec-Fetch-Site: " + site + ")"
	}
	return ""
}

// errNoToken is the error of a non-loopback address without a token.
var errNoToken = errors.New("rest: the REST API and the Prometheus endpoint serve a non-loopback address only with a token (rest.auth-token, --rest-auth-token-file or $FLINKGO_REST_TOKEN): without one, anyone who reaches the address could read the jobs, and no user can be told apart by their socket off loopback; set a token, or bind 127.0.0.1 (rest.address / --rest-address)")
