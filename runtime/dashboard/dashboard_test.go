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
		"/static/app.js": "text/javascript", "/static/charts.js": "text/javascript", "/static/style.css": "text/css",
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
	scripts, err := fs.Glob(assets, "assets/static/*.js")
	if err != nil || len(scripts) < 2 {
		t.Fatalf("the page's scripts: %v %v", scripts, err)
	}
	for _, name := range scripts {
		js, err := fs.ReadFile(assets, name)
		if err != nil {
			t.Fatal(err)
		}
		for _, bad := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function", "setAttribute(\"style\""} {
			if strings.Contains(string(js), bad) {
				t.Errorf("%s uses %s: API data must be set as text", name, bad)
			}
		}
		if !strings.Contains(string(index), `src="/static/`+strings.TrimPrefix(name, "assets/static/")+`"`) {
			t.Errorf("index.html does not load %s", name)
		}
	}
}

// The page's scripts share one global scope: a top-level name declared in
// two of them is a SyntaxError that stops the second script (a chart
// library's PAD beside the graph's stopped the whole page).
func TestTheScriptsDeclareEachTopLevelNameOnce(t *testing.T) {
	scripts, err := fs.Glob(assets, "assets/static/*.js")
	if err != nil {
		t.Fatal(err)
	}
	declared := map[string]string{}
	decl := regexp.MustCompile(`(?m)^(?:async\s+)?(?:const|let|var|function|class)\s+(.+?)(?:[({;]|$)`)
	for _, name := range scripts {
		js, err := fs.ReadFile(assets, name)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range decl.FindAllStringSubmatch(string(js), -1) {
			// "const A = 1, B = 2" declares A and B.
			for _, part := range strings.Split(m[1], ",") {
				id := strings.TrimSpace(strings.SplitN(part, "=", 2)[0])
				if id == "" || strings.ContainsAny(id, " []") {
					continue
				}
				if other, ok := declared[id]; ok && other != name {
					t.Errorf("%s is declared at the top of both %s and %s", id, other, name)
				}
				declared[id] = name
			}
		}
	}
	if len(declared) < 10 {
		t.Fatalf("found only %d top-level names: %v", len(declared), declared)
	}
}
