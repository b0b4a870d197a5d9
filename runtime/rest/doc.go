// Package rest serves a Flink-compatible REST API over a flinkgo server's
// jobs (package server): Flink's paths and JSON field names
// (rest_v1_dispatcher.yml), so that Flink's scripts, its autoscaler's reads
// and a dashboard can use it. Errors are Flink's {"errors": [...]} with the
// matching status code.
//
// Jobs are Flink's jobs; a job vertex is a chain of operators run as one
// task per subtask (job.Vertex), its id 32 hex digits derived from its
// first operator's uid, so it stays the same across runs of the same plan.
// Metrics carry Flink's names (package metrics); rates cover the last ten
// seconds.
//
// Who may call (access.go): the users who may submit jobs. A call is
// admitted with the bearer token (rest.auth-token), or over loopback from
// a user the job socket admits (listen.PeerRule), told by the owner of
// the client's socket (listen.LoopbackPeerUID); others get 401. Mutating
// calls (POST, PATCH, PUT, DELETE) always need that, reads that show jobs
// unless rest.read-access is any; the dashboard's files and /config are
// public.
// Savepoints, checkpoints and stops are asynchronous, as Flink's: the call
// answers 202 with a request id to poll.
//
// Handler also serves the Prometheus exposition at /metrics (see
// NewPrometheusHandler, which the separate metrics.reporter.prom.port
// endpoint serves alone), and the web dashboard (package dashboard) at /,
// /index.html and /static/.
package rest
