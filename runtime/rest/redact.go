package rest

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/flinkgo/flinkgo/runtime/config"
	"github.com/flinkgo/flinkgo/runtime/server"
)

// minScrubbed is the shortest secret value scrubbed from answers' text:
// shorter ones would rewrite unrelated text (they are still hidden where
// the configuration is shown, by config.Registry.Redact).
const minScrubbed = 4

// redacting serves next and replaces in its answer every value that a
// job's configuration gives a secret key (s3.access-key, s3.secret-key,
// rest.auth-token: config.Key.Secret), as written and as JSON escapes it,
// by config.HiddenValue. The configuration itself is redacted where it is
// served; this catches a secret that reached a message (an exception, a
// path), so that no answer carries one.
func redacting(srv *server.Server, next http.Handler) http.Handler {
	known := config.Known()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var secrets [][]byte
		for _, info := range srv.Jobs() {
			for _, v := range known.SecretValues(info.Config) {
				if len(v) < minScrubbed {
					continue
				}
				secrets = append(secrets, []byte(v))
				if escaped, err := json.Marshal(v); err == nil && string(escaped[1:len(escaped)-1]) != v {
					secrets = append(secrets, escaped[1:len(escaped)-1])
				}
			}
		}
		if len(secrets) == 0 {
			next.ServeHTTP(w, r)
			return
		}
		buf := &bufferedAnswer{header: w.Header(), code: http.StatusOK}
		next.ServeHTTP(buf, r)
		body := buf.body.Bytes()
		for _, s := range secrets {
			body = bytes.ReplaceAll(body, s, []byte(config.HiddenValue))
		}
		w.Header().Del("Content-Length")
		w.WriteHeader(buf.code)
		_, _ = w.Write(body)
	})
}

// bufferedAnswer keeps an answer to rewrite it before it is sent.
type bufferedAnswer struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (b *bufferedAnswer) Header() http.Header         { return b.header }
func (b *bufferedAnswer) WriteHeader(code int)        { b.code = code }
func (b *bufferedAnswer) Write(p []byte) (int, error) { return b.body.Write(p) }
