package dashboard

import (
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

func get(t *testing.T, path string) (*http.Response, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	Handler().ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
	resp := rec.Result()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}

func TestServesThePageAndItsAssetsWithTheirPolicy(t *testing.T) {
	for path, wantType := range map[string]string{
		"/": "text/html", "/index.html": "text/html",
		"/static/app.js": "text/javascript", "/static/style.css": "text/css",
	} {
		resp, body := get(t, path)
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), wantType) || body == "" {
			t.Errorf("GET %s: %d %q, %d bytes", path, resp.StatusCode, resp.Header.Get("Content-Type"), len(body))
		}
		if got := resp.Header.Get("Content-Security-Policy"); got != ContentSecurityPolicy {
			t.Errorf("GET %s: Content-Security-Policy %q", path, got)
		}
		if resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: no X-Content-Type-Options: nosniff", path)
		}
	}
	for _, path := range []string{"/static/", "/static/nope.js", "/assets/index.html"} {
		if resp, _ := get(t, path); resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404 (no listings, nothing outside the assets)", path, resp.StatusCode)
		}
	}
}

// The policy forbids inline scripts and eval; the page must need neither,
// and its script must never parse API data as markup.
func TestThePageNeedsNoInlineScriptAndParsesNoMarkup(t *testing.T) {
	if !strings.Contains(ContentSecurityPolicy, "script-src 'self'") || strings.Contains(ContentSecurityPolicy, "unsafe") {
		t.Fatalf("policy %q", ContentSecurityPolicy)
	}
	index, err := fs.ReadFile(assets, "assets/index.html")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range regexp.MustCompile(`<script[^>]*>`).FindAllString(string(index), -1) {
		if !strings.Contains(s, ` src="/static/`) {
			t.Errorf("index.html: an inline script: %s", s)
		}
	}
	if m := regexp.MustCompile(`(?i)\son[a-z]+=|\sstyle=|javascript:`).FindString(string(index)); m != "" {
		t.Errorf("index.html: an inline handler or style: %q", m)
	}
	js, err := fs.ReadFile(assets, "assets/static/app.js")
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function", "setAttribute(\"style\""} {
		if strings.Contains(string(js), bad) {
			t.Errorf("app.js uses %s: API data must be set as text", bad)
		}
	}
}
