package rest

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/flinkgo/flinkgo/runtime/config"
	"github.com/flinkgo/flinkgo/runtime/job"
	"github.com/flinkgo/flinkgo/runtime/server"
)

// callerEnv makes the test binary an HTTP client: it makes the call
// "METHOD URL [BODY]" in it and prints the status code.
const callerEnv = "FLINKGO_REST_TEST_CALL"

// runCaller is the test binary as callerEnv's client.
func runCaller(spec string) int {
	method, rest, _ := strings.Cut(spec, " ")
	url, body, _ := strings.Cut(rest, " ")
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	fmt.Printf("%d %s", resp.StatusCode, data)
	return 0
}

// asNobody makes the call "METHOD URL [BODY]" from a copy of the test
// binary run as uid and gid 65534 (nobody), and returns the status code
// and body.
func asNobody(t *testing.T, spec string) (int, string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a client as another uid (nobody); run the tests as root to check that other users are refused")
	}
	// The test binary sits in a private directory: nobody needs a copy.
	dir, err := os.MkdirTemp("", "flinkgo-rest-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "caller")
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin)
	cmd.Env = []string{callerEnv + "=" + spec}
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the client as nobody: %v %s", err, out)
	}
	code, body, _ := strings.Cut(string(out), " ")
	n, err := strconv.Atoi(code)
	if err != nil {
		t.Fatalf("the client as nobody printed %q", out)
	}
	return n, body
}

// Without a token, another local user (uid 65534) can neither change a
// job (cancel, savepoint into a directory of its choosing, checkpoint,
// resource requirements) nor read it, through the REST API or the
// Prometheus endpoint; the dashboard's files stay public. The server's
// own user (this process, root) still can.
func TestAnotherUserCannotChangeOrReadJobs(t *testing.T) {
	srv := server.New(job.Options{Stdout: io.Discard, SourceBatchRows: 100}, nil)
	ep := NewEndpoints(srv, nil)
	if err := ep.Start(Listen{RESTPort: 0, PromPort: 0}); err != nil {
		t.Fatal(err)
	}
	restAddr, promAddr := ep.Addresses()
	f := &fixture{t: t, srv: srv, ep: ep, base: "http://" + restAddr, prom: "http://" + promAddr,
		client: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}}
	t.Cleanup(func() {
		f.jobs.Wait()
		ep.Close()
		srv.Wait()
	})
	jid, _ := f.submit(numbersPlan(t, 0, 1000))
	await(t, "the job to run", func() bool { return f.status(jid) == "RUNNING" })
	stolen := filepath.Join(t.TempDir(), "stolen")
	for _, spec := range []string{
		"PATCH " + f.base + "/jobs/" + jid + "?mode=cancel",
		"POST " + f.base + "/jobs/" + jid + `/savepoints {"target-directory": "` + stolen + `"}`,
		"POST " + f.base + "/jobs/" + jid + "/checkpoints",
		"POST " + f.base + "/jobs/" + jid + "/stop {}",
		"PUT " + f.base + "/jobs/" + jid + `/resource-requirements {}`,
		"GET " + f.base + "/jobs/" + jid,
		"GET " + f.base + "/jobs/" + jid + "/config",
		"GET " + f.base + "/jobs/overview",
		"GET " + f.base + "/metrics",
		"GET " + f.prom + "/metrics",
	} {
		code, body := asNobody(t, spec)
		if code != http.StatusUnauthorized || !strings.Contains(body, "uid 65534") {
			t.Errorf("%s as nobody: %d %s, want 401 naming the uid", spec, code, body)
		}
	}
	if code, body := asNobody(t, "GET "+f.base+"/"); code != http.StatusOK {
		t.Errorf("the dashboard's page as nobody: %d %s", code, body)
	}
	if _, err := os.Stat(stolen); !os.IsNotExist(err) {
		t.Errorf("a savepoint was written for nobody into %s (%v)", stolen, err)
	}
	if st := f.status(jid); st != "RUNNING" {
		t.Fatalf("nobody's refused calls changed the job: %s", st)
	}
	if code := f.call("PATCH", "/jobs/"+jid+"?mode=cancel", "", "", nil); code != http.StatusAccepted {
		t.Fatalf("cancel by the server's own user: %d", code)
	}
	await(t, "the job to be canceled", func() bool { return f.status(jid) == "CANCELED" })
}

// With rest.read-access: any, another local user reads the jobs but
// still cannot change them.
func TestReadAccessAnyOpensReadsOnly(t *testing.T) {
	srv := server.New(job.Options{}, nil)
	ep := NewEndpoints(srv, nil)
	t.Cleanup(func() {
		ep.Close()
		srv.Wait()
	})
	if err := ep.Start(Listen{RESTPort: 0, PromPort: -1, ReadAccess: ReadAccessAny}); err != nil {
		t.Fatal(err)
	}
	addr, _ := ep.Addresses()
	if code, body := asNobody(t, "GET http://"+addr+"/jobs/overview"); code != http.StatusOK {
		t.Errorf("a read as nobody with rest.read-access any: %d %s", code, body)
	}
	if code, body := asNobody(t, "PATCH http://"+addr+"/jobs/00000000000000000000000000000000?mode=cancel"); code != http.StatusUnauthorized {
		t.Errorf("a cancel as nobody with rest.read-access any: %d %s", code, body)
	}
}

// No answer of the REST API or the Prometheus endpoint carries a value of
// a secret key of a job's configuration: every GET route, with the job's
// id, a vertex's id and a savepoint trigger's id filled in, is fetched and
// searched for the S3 keys and the REST token; /jobs/:jid/config shows
// them as config.HiddenValue.
func TestNoAnswerCarriesASecret(t *testing.T) {
	f := newFixture(t)
	p := numbersPlan(t, 0, 1000)
	secrets := map[string]string{"s3.access-key": "AKIAEXAMPLEACCESS", "s3.secret-key": "wJalr/secret+key<&>",
		"rest.auth-token": "job-token-0123"}
	for k, v := range secrets {
		p.Config[k] = v
	}
	jid, _ := f.submit(p)
	await(t, "the job to run", func() bool { return f.status(jid) == "RUNNING" })
	vid := f.vertexIDs(jid)[0]
	var trig object
	if code := f.call("POST", "/jobs/"+jid+"/savepoints", "", `{"cancel-job": false}`, &trig); code != http.StatusAccepted {
		t.Fatalf("trigger a savepoint: %d %v", code, trig)
	}
	tid, _ := trig["request-id"].(string)
	fill := strings.NewReplacer("{jid}", jid, "{vid}", vid, "{tid}", tid, "{rid}", "00000000-0000-0000-0000-000000000000")
	h := f.ep.handler
	var paths []string
	for pattern := range h.routes() {
		if method, path, _ := strings.Cut(pattern, " "); method == "GET" {
			paths = append(paths, fill.Replace(path))
		}
	}
	paths = append(paths, "/jobs/"+jid+"/vertices/"+vid+"/metrics?get=numRecordsIn",
		"/jobs/"+jid+"/vertices/"+vid+"/subtasks/metrics?get=numRecordsIn&agg=max")
	get := func(url string) string {
		resp, err := f.client.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	for _, path := range paths {
		body := get(f.base + path)
		for k, v := range secrets {
			if strings.Contains(body, v) || strings.Contains(body, strings.Trim(fmt.Sprintf("%q", v), `"`)) {
				t.Errorf("GET %s carries the value of %s: %s", path, k, body)
			}
		}
	}
	if body := get(f.prom + "/metrics"); strings.Contains(body, secrets["s3.secret-key"]) {
		t.Errorf("the Prometheus endpoint carries a secret")
	}
	var cfg struct {
		ExecutionConfig struct {
			UserConfig map[string]string `json:"user-config"`
		} `json:"execution-config"`
	}
	f.get("/jobs/"+jid+"/config", &cfg)
	for k := range secrets {
		if got := cfg.ExecutionConfig.UserConfig[k]; got != config.HiddenValue {
			t.Errorf("/jobs/:jid/config shows %s as %q, want %q", k, got, config.HiddenValue)
		}
	}
	if code := f.call("PATCH", "/jobs/"+jid+"?mode=cancel", "", "", nil); code != http.StatusAccepted {
		t.Fatalf("cancel: %d", code)
	}
	await(t, "the job to be canceled", func() bool { return f.status(jid) == "CANCELED" })
}

// A browser's cross-site request cannot change a job, though it comes
// from the server's own user over loopback: a POST with a foreign Origin
// (sent as text/plain, which needs no preflight) is refused, a body not
// sent as JSON is refused, and a Host header naming another name than
// this server's (DNS rebinding) is refused unless rest.allowed-hosts
// names it. The same call from the server's own page succeeds.
func TestCrossSiteRequestsAndForeignHostsAreRefused(t *testing.T) {
	srv := server.New(job.Options{Stdout: io.Discard, SourceBatchRows: 100}, nil)
	ep := NewEndpoints(srv, nil)
	if err := ep.Start(Listen{RESTPort: 0, PromPort: -1, AllowedHosts: []string{"flinkgo.internal"}}); err != nil {
		t.Fatal(err)
	}
	restAddr, _ := ep.Addresses()
	f := &fixture{t: t, srv: srv, ep: ep, base: "http://" + restAddr,
		client: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}}
	t.Cleanup(func() {
		f.jobs.Wait()
		ep.Close()
		srv.Wait()
	})
	jid, _ := f.submit(numbersPlan(t, 0, 1000))
	await(t, "the job to run", func() bool { return f.status(jid) == "RUNNING" })
	_, port, _ := strings.Cut(restAddr, ":")
	do := func(method, path, host string, headers map[string]string, body string) int {
		t.Helper()
		req, err := http.NewRequest(method, f.base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if host != "" {
			req.Host = host
		}
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, err := f.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		t.Logf("%s %s (Host %q, %v): %d %s", method, path, host, headers, resp.StatusCode, data)
		return resp.StatusCode
	}
	savepoint := "/jobs/" + jid + "/savepoints"
	body := `{"target-directory": "` + filepath.Join(t.TempDir(), "sp") + `"}`
	for _, c := range []struct {
		what    string
		host    string
		headers map[string]string
		want    int
	}{
		{"a form-like POST from a foreign origin", "", map[string]string{"Origin": "http://evil.example", "Content-Type": "text/plain"}, http.StatusForbidden},
		{"a JSON POST from a foreign origin", "", map[string]string{"Origin": "http://evil.example", "Content-Type": "application/json"}, http.StatusForbidden},
		{"a POST from another port of localhost", "", map[string]string{"Origin": "http://127.0.0.1:1", "Content-Type": "application/json"}, http.StatusForbidden},
		{"a cross-site POST without Origin", "", map[string]string{"Sec-Fetch-Site": "cross-site", "Content-Type": "application/json"}, http.StatusForbidden},
		{"a text/plain body", "", map[string]string{"Content-Type": "text/plain"}, http.StatusUnsupportedMediaType},
		{"a rebinding name as Host", "evil.example:" + port, map[string]string{"Content-Type": "application/json"}, http.StatusMisdirectedRequest},
	} {
		if code := do("POST", savepoint, c.host, c.headers, body); code != c.want {
			t.Errorf("%s: %d, want %d", c.what, code, c.want)
		}
	}
	if code := do("GET", "/jobs/overview", "evil.example:"+port, nil, ""); code != http.StatusMisdirectedRequest {
		t.Errorf("a read with a rebinding name as Host: %d, want 421", code)
	}
	for _, host := range []string{"localhost:" + port, "flinkgo.internal:" + port, restAddr} {
		if code := do("GET", "/jobs/overview", host, nil, ""); code != http.StatusOK {
			t.Errorf("a read with Host %s: %d, want 200", host, code)
		}
	}
	if st := f.status(jid); st != "RUNNING" {
		t.Fatalf("refused calls changed the job: %s", st)
	}
	// The dashboard's own call: same origin, JSON.
	if code := do("POST", savepoint, "", map[string]string{"Origin": f.base, "Content-Type": "application/json"}, body); code != http.StatusAccepted {
		t.Fatalf("the page's own savepoint: %d", code)
	}
	if code := do("PATCH", "/jobs/"+jid+"?mode=cancel", "", map[string]string{"Origin": f.base}, ""); code != http.StatusAccepted {
		t.Fatalf("the page's own cancel: %d", code)
	}
	await(t, "the job to be canceled", func() bool { return f.status(jid) == "CANCELED" })
}
