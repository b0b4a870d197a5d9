package rest

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/flinkgo/flinkgo/internal/logging"
	"github.com/flinkgo/flinkgo/runtime/dashboard"
	"github.com/flinkgo/flinkgo/runtime/job"
	"github.com/flinkgo/flinkgo/runtime/server"
	"github.com/flinkgo/flinkgo/runtime/server/listen"
)

// Version is the Flink REST API version the paths follow (also served
// under /v1).
const flinkVersion = "1.20-flinkgo"

// Options configure a Handler.
type Options struct {
	// Server holds the jobs.
	Server *server.Server
	// AuthToken, when set, admits a caller who sends it as
	// "Authorization: Bearer <token>", from anywhere.
	AuthToken string
	// Peers are the local users admitted over loopback without the token;
	// nil for the server's own user and root (listen.NewPeerRule("")).
	Peers *listen.PeerRule
	// ReadAccess is ReadAccessOwner ("" too: reads that show jobs follow
	// the rule of mutating calls) or ReadAccessAny.
	ReadAccess string
	// AllowedHosts are names a Host header may carry besides IP literals
	// and localhost.
	AllowedHosts []string
	// Logger receives refused calls and failed asynchronous operations.
	Logger *slog.Logger
}

// Handler serves the REST API.
type Handler struct {
	srv     *server.Server
	log     *slog.Logger
	mux     *http.ServeMux
	guarded http.Handler // mux behind the access rules
	// ctx bounds asynchronous operations; Close cancels it and waits.
	ctx    context.Context
	cancel context.CancelFunc
	ops    sync.WaitGroup

	mu       sync.Mutex
	triggers map[string]*trigger // by request id
}

// New returns a Handler over opts.Server's jobs. Close it to end the
// asynchronous operations it started.
func New(opts Options) *Handler {
	ctx, cancel := context.WithCancel(context.Background())
	h := &Handler{srv: opts.Server, log: logging.OrDiscard(opts.Logger),
		mux: http.NewServeMux(), ctx: ctx, cancel: cancel, triggers: map[string]*trigger{}}
	for pattern, f := range h.routes() {
		h.mux.HandleFunc(pattern, f)
		method, path, _ := strings.Cut(pattern, " ")
		h.mux.HandleFunc(method+" /v1"+path, f)
	}
	dash := dashboard.Handler()
	for _, pattern := range dashboard.Patterns {
		h.mux.Handle(pattern, dash)
	}
	h.guarded = newAccess(opts.AuthToken, opts.Peers, opts.ReadAccess, opts.AllowedHosts, h.log).guard(redacting(h.srv, http.HandlerFunc(h.route)), h.public)
	return h
}

// routes are the API's calls by http.ServeMux pattern (each also served
// under /v1).
func (h *Handler) routes() map[string]http.HandlerFunc {
	return map[string]http.HandlerFunc{
		"GET /config":                                     h.config,
		"GET /overview":                                   h.overview,
		"GET /jobs":                                       h.jobs,
		"GET /jobs/overview":                              h.jobsOverview,
		"GET /jobs/{jid}":                                 h.jobDetails,
		"PATCH /jobs/{jid}":                               h.cancelJob,
		"GET /jobs/{jid}/status":                          h.jobStatus,
		"GET /jobs/{jid}/config":                          h.jobConfig,
		"GET /jobs/{jid}/exceptions":                      h.exceptions,
		"GET /jobs/{jid}/autoscaler":                      h.autoscaler,
		"GET /jobs/{jid}/metrics-history":                 h.metricsHistory,
		"GET /jobs/{jid}/plan":                            h.plan,
		"GET /jobs/{jid}/vertices/{vid}":                  h.vertex,
		"GET /jobs/{jid}/vertices/{vid}/backpressure":     h.backpressure,
		"GET /jobs/{jid}/vertices/{vid}/watermarks":       h.watermarks,
		"GET /jobs/{jid}/vertices/{vid}/metrics":          h.vertexMetrics,
		"GET /jobs/{jid}/vertices/{vid}/subtasks/metrics": h.subtaskMetrics,
		"GET /jobs/{jid}/checkpoints":                     h.checkpoints,
		"GET /jobs/{jid}/checkpoints/config":              h.checkpointConfig,
		"POST /jobs/{jid}/checkpoints":                    h.triggerCheckpoint,
		"GET /jobs/{jid}/checkpoints/{tid}":               h.triggerStatus,
		"POST /jobs/{jid}/savepoints":                     h.triggerSavepoint,
		"GET /jobs/{jid}/savepoints/{tid}":                h.triggerStatus,
		"POST /jobs/{jid}/stop":                           h.stop,
		"GET /jobs/{jid}/resource-requirements":           h.resourceRequirements,
		"PUT /jobs/{jid}/resource-requirements":           h.setResourceRequirements,
		"GET /jobs/{jid}/rescales/overview":               h.rescalesOverview,
		"GET /jobs/{jid}/rescales/history":                h.rescalesHistory,
		"GET /jobs/{jid}/rescales/summary":                h.rescalesSummary,
		"GET /jobs/{jid}/rescales/config":                 h.rescalesConfig,
		"GET /jobs/{jid}/rescales/details/{rid}":          h.rescaleDetails,
		"GET /metrics":                                    NewPrometheusHandler(h.srv).ServeHTTP,
	}
}

// public says whether anyone may make the read r: the dashboard's page
// and files (they hold no job's data), and the cluster's /config
// (flinkgo's version and features).
func (h *Handler) public(r *http.Request) bool {
	_, pattern := h.mux.Handler(r)
	return pattern == "GET /config" || pattern == "GET /v1/config" || slices.Contains(dashboard.Patterns, pattern)
}

// Close cancels the asynchronous operations still running and waits for
// them.
func (h *Handler) Close() {
	h.cancel()
	h.ops.Wait()
}

// ServeHTTP serves one call behind the access rules (see access), an
// unknown path or method as Flink's errors.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.guarded.ServeHTTP(w, r)
}

// route serves an admitted call.
func (h *Handler) route(w http.ResponseWriter, r *http.Request) {
	_, pattern := h.mux.Handler(r)
	if pattern == "" {
		writeError(w, http.StatusNotFound, "Not found: "+r.URL.Path)
		return
	}
	h.mux.ServeHTTP(w, r)
}

// writeJSON answers v with status code.
func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// writeError answers Flink's error body.
func writeError(w http.ResponseWriter, code int, msg ...string) {
	writeJSON(w, code, map[string][]string{"errors": msg})
}

// lookup finds the path's job, or answers 404.
func (h *Handler) lookup(w http.ResponseWriter, r *http.Request) (server.JobInfo, bool) {
	id := r.PathValue("jid")
	info, ok := h.srv.JobInfo(id)
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("Job %s not found", id))
	}
	return info, ok
}

// running returns the path's job when it runs, or answers why not.
func (h *Handler) running(w http.ResponseWriter, r *http.Request) (server.JobInfo, bool) {
	info, ok := h.lookup(w, r)
	if !ok {
		return info, false
	}
	if info.Job == nil || info.State.Terminal() {
		writeError(w, http.StatusConflict, fmt.Sprintf("Job %s is not running: it is %s", info.ID, flinkState(info.State)))
		return info, false
	}
	return info, true
}

// VertexID is the REST id of the vertex whose chain starts with the
// operator of uid (job.VertexID).
func VertexID(uid string) string { return job.VertexID(uid) }

// vertex serves the path's vertex of a job.
func (h *Handler) vertex(w http.ResponseWriter, r *http.Request) {
	info, v, ok := h.lookupVertex(w, r)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, vertexDetails(info, v))
}

// lookupVertex finds the path's vertex of a job, or answers 404.
func (h *Handler) lookupVertex(w http.ResponseWriter, r *http.Request) (server.JobInfo, job.Vertex, bool) {
	info, ok := h.lookup(w, r)
	if !ok {
		return info, job.Vertex{}, false
	}
	vid := r.PathValue("vid")
	if info.Job != nil {
		for _, v := range info.Job.Vertices() {
			if VertexID(v.Head.UID) == vid {
				return info, v, true
			}
		}
	}
	writeError(w, http.StatusNotFound, fmt.Sprintf("Job %s has no vertex %s", info.ID, vid))
	return info, job.Vertex{}, false
}
