package dashboard

import (
	"embed"
	"io/fs"
	"net/http"
	"strings"
)

//go:embed assets
var assets embed.FS

// ContentSecurityPolicy is sent with every page and asset: scripts, styles
// and API calls from this server only, nothing inline, no frames.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Patterns are the paths Handler serves, as http.ServeMux patterns.
var Patterns = []string{"GET /{$}", "GET /index.html", "GET /static/"}

// Handler serves the dashboard: the page at / and /index.html, its script
// and style under /static/.
func Handler() http.Handler {
	root, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	index, err := fs.ReadFile(root, "index.html")
	if err != nil {
		panic(err)
	}
	files := http.FileServerFS(root)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", ContentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache")
		switch {
		case r.URL.Path == "/" || r.URL.Path == "/index.html":
			h.Set("Content-Type", "text/html; charset=utf-8")
			_, _ = w.Write(index)
		case strings.HasPrefix(r.URL.Path, "/static/") && !strings.HasSuffix(r.URL.Path, "/"):
			files.ServeHTTP(w, r)
		default: // no directory listings
			http.NotFound(w, r)
		}
	})
}
