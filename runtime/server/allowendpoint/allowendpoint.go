package allowendpoint

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Flag is the server's flag that adds an endpoint, named in refusals.
const Flag = "--allow-endpoint"

// List is a set of allowed endpoints, or every one. The zero value allows
// none.
type List struct {
	any     bool
	entries []entry
	written []string // as given, for messages
}

type entry struct {
	host string // lower case, without brackets
	port string // "" for any
}

// Any allows every endpoint: the embedded runtime, which runs as its only
// client's user and may reach what that user may.
func Any() *List { return &List{any: true} }

// New allows the endpoints of entries (see the package doc); an empty list
// allows none.
func New(entries []string) (*List, error) {
	l := &List{}
	for _, e := range entries {
		e = strings.TrimSpace(e)
		if e == "*" {
			return Any(), nil
		}
		host, port, err := split(e)
		if err != nil || host == "" {
			return nil, fmt.Errorf("%s %q: want host, host:port, a URL such as https://host:port, or *", Flag, e)
		}
		l.entries = append(l.entries, entry{host: host, port: port})
		l.written = append(l.written, e)
	}
	return l, nil
}

// AllowsAny reports whether every endpoint is allowed.
func (l *List) AllowsAny() bool { return l.any }

func (l *List) String() string {
	if l.any {
		return "any endpoint"
	}
	if len(l.written) == 0 {
		return "no endpoint"
	}
	return strings.Join(l.written, ", ")
}

// split parses host:port, host, [v6]:port or a URL into a lower-case host
// and a port ("" when none is given).
func split(s string) (host, port string, err error) {
	if strings.Contains(s, "://") {
		u, err := url.Parse(s)
		if err != nil {
			return "", "", err
		}
		if u.User != nil {
			return "", "", fmt.Errorf("credentials in an endpoint URL")
		}
		return strings.ToLower(u.Hostname()), u.Port(), nil
	}
	if strings.ContainsAny(s, "/@ ") {
		return "", "", fmt.Errorf("not a host")
	}
	if h, p, err := net.SplitHostPort(s); err == nil {
		if _, err := strconv.ParseUint(p, 10, 16); err != nil {
			return "", "", fmt.Errorf("not a port: %q", p)
		}
		return strings.ToLower(h), p, nil
	}
	if strings.Contains(s, ":") && net.ParseIP(strings.Trim(s, "[]")) == nil {
		return "", "", fmt.Errorf("not a host")
	}
	return strings.ToLower(strings.Trim(s, "[]")), "", nil
}

// Check checks one endpoint a client named (host:port, or a URL); what says
// what it is for. A URL without a port has its scheme's (80 or 443).
func (l *List) Check(what, endpoint string) error {
	if l == nil || l.any {
		return nil
	}
	host, port, err := split(strings.TrimSpace(endpoint))
	if err != nil || host == "" {
		return fmt.Errorf("%s %q is not a host:port or URL", what, endpoint)
	}
	if port == "" && strings.Contains(endpoint, "://") {
		port = "443"
		if strings.HasPrefix(strings.ToLower(strings.TrimSpace(endpoint)), "http://") {
			port = "80"
		}
	}
	if slices.ContainsFunc(l.entries, func(e entry) bool { return e.host == host && (e.port == "" || e.port == port) }) {
		return nil
	}
	return fmt.Errorf("%s %q, which this server is not allowed to connect to (allowed: %s); "+
		"the server's operator allows it with %s %s", what, endpoint, l, Flag, net.JoinHostPort(host, port))
}
