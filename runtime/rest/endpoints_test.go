package rest

import (
	"net"
	"strings"
	"testing"

	"github.com/flinkgo/flinkgo/internal/logging/logtest"
	"github.com/flinkgo/flinkgo/runtime/job"
	"github.com/flinkgo/flinkgo/runtime/server"
)

// The endpoints bind loopback unless told otherwise, with no warning;
// another address is bound as asked only with a token, and logged as a
// warning; without a token it is refused, for the REST API and the
// Prometheus endpoint alike.
func TestNonLoopbackNeedsAToken(t *testing.T) {
	for _, l := range []Listen{{Address: "0.0.0.0", RESTPort: 0, PromPort: -1}, {Address: "0.0.0.0", RESTPort: -1, PromPort: 0}} {
		srv := server.New(job.Options{}, nil)
		ep := NewEndpoints(srv, nil)
		err := ep.Start(l)
		restAddr, promAddr := ep.Addresses()
		ep.Close()
		srv.Wait()
		if err == nil || !strings.Contains(err.Error(), "only with a token") || restAddr != "" || promAddr != "" {
			t.Errorf("%+v without a token: served %q %q, error %v", l, restAddr, promAddr, err)
		}
	}
	for _, c := range []struct {
		address         string
		loopback, warns bool
	}{{"", true, false}, {"localhost", true, false}, {"0.0.0.0", false, true}} {
		logger, logs := logtest.New()
		srv := server.New(job.Options{}, nil)
		ep := NewEndpoints(srv, logger)
		if err := ep.Start(Listen{Address: c.address, RESTPort: 0, PromPort: -1, AuthToken: "a-token"}); err != nil {
			t.Fatal(err)
		}
		restAddr, promAddr := ep.Addresses()
		ep.Close()
		srv.Wait()
		host, _, err := net.SplitHostPort(restAddr)
		if err != nil || promAddr != "" {
			t.Fatalf("address %q: served %q and %q (%v)", c.address, restAddr, promAddr, err)
		}
		if ip := net.ParseIP(host); ip == nil || c.loopback != ip.IsLoopback() {
			t.Errorf("address %q: bound %s, want loopback %v", c.address, restAddr, c.loopback)
		}
		warned := len(logs.Lines("level=WARN", "non-loopback")) > 0
		if warned != c.warns {
			t.Errorf("address %q: warning logged %v, want %v; the log:\n%s", c.address, warned, c.warns, logs.String())
		}
	}
}
