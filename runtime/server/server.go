// Package server serves the job service (runtime/proto/job.proto): clients
// submit plans, the server plans and runs them with package job and
// streams progress, collected rows and the outcome back.
//
// A detached job (ExecuteRequest.detached, what the Python client asks for
// unless told otherwise) runs until it ends or is canceled, as Flink's
// `flink run -d`: its client may exit or disconnect, and the job's events
// then go nowhere. An attached job lives as long as its Execute call: a
// client that cancels the call or disconnects cancels the job (through the
// UDF operators' cancel path, never waiting on a hung worker); so does a
// job with collect sinks, whose rows have no other way out. Cancel cancels
// a job by id, CancelAll every job (the server stopping); Rescale asks a
// running job to rescale in place (package job's Rescale), and
// RescaleHistory reads its rescales.
//
// The server binds nothing itself: the caller (cmd/flinkgo) listens (see
// package listen for who may connect) and hands it a grpc.Server.
//
// Paths that clients choose (file sources and sinks, the path-typed config
// entries execution.checkpointing.dir, .savepoint-dir and
// execution.state-recovery.path, a savepoint request's directory) are
// checked against the roots given to AllowPaths (package allowpath): a
// path outside them fails the job at planning, naming the path, the roots
// and the --allow-path flag. `flinkgo serve` allows its working directory
// and the temp dir unless given --allow-path; the embedded runtime, which
// runs as its only client's user, allows any path.
//
// Endpoints that clients name (Kafka bootstrap servers, s3.endpoint) are
// checked the same way against AllowEndpoints (package allowendpoint):
// `flinkgo serve` allows none unless given --allow-endpoint; the embedded
// runtime allows any.
//
// What one request may cost is bounded before it is planned (limits.go:
// names, columns, parts of a plan; INVALID_ARGUMENT), and so is the number
// of plannings at once.
package server

import (
	"bytes"
	"cmp"
	"slices"

	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"runtime"
	"sync"
	"time"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/internal/arrowipc"
	"github.com/flinkgo/flinkgo/internal/beneath"
	"github.com/flinkgo/flinkgo/internal/logging"
	"github.com/flinkgo/flinkgo/runtime/config"
	"github.com/flinkgo/flinkgo/runtime/job"
	"github.com/flinkgo/flinkgo/runtime/metrics"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/runtime/proto/jobpb"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
	"github.com/flinkgo/flinkgo/runtime/server/allowendpoint"
	"github.com/flinkgo/flinkgo/runtime/server/allowpath"
	"github.com/flinkgo/flinkgo/udf/bridge"
)

// ErrJobCanceled is the cause of a job canceled through Cancel.
var ErrJobCanceled = errors.New("job canceled by request")

// errClientGone is the cause of an attached job whose client went away.
var errClientGone = errors.New("the client canceled the job or disconnected (an attached job ends with its client)")

// ErrServerStopping is the cause of the jobs canceled by CancelAll.
var ErrServerStopping = errors.New("the runtime server is stopping")

// Server implements jobpb.JobServiceServer.
type Server struct {
	jobpb.UnimplementedJobServiceServer
	jobOptions job.Options
	// log is jobOptions.Logger, or a discarding logger: job submissions and ends.
	log *slog.Logger

	// defaults are config entries added to every plan that lacks them
	// (`flinkgo run --from-savepoint` sets the restore path).
	defaults map[string]string
	// paths are the roots of client-chosen paths; nil allows any.
	paths *allowpath.Roots
	// savepointChecked, when set (tests), runs after a savepoint
	// directory's check, before its use.
	savepointChecked func()
	// endpointsAllowed are the endpoints clients may name; nil allows any.
	endpointsAllowed *allowendpoint.List

	mu struct {
		sync.Mutex
		jobs map[string]*runningJob
		// ended are the latest ended jobs, oldest first (see Jobs).
		ended []*runningJob
	}
	// endpoints, when set, is called with every planned job's
	// configuration (see SetEndpoints).
	endpoints func(cfg map[string]string) error
	// planSlots bounds the plannings that run at once (what planning a
	// request costs is bounded by checkLimits; this bounds how many pay it
	// together).
	planSlots chan struct{}
	// running counts Execute calls, so a stopping server can wait for its
	// jobs (and their workers) to be gone.
	running sync.WaitGroup
	// jobsCtx is the parent of detached jobs' contexts; CancelAll ends it.
	jobsCtx    context.Context
	cancelJobs context.CancelCauseFunc
}

// CancelAll cancels every job, detached ones included, and keeps later
// ones from running: call it when the server stops (before Wait).
func (s *Server) CancelAll() {
	s.cancelJobs(ErrServerStopping)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.mu.jobs {
		r.cancel(ErrServerStopping)
	}
}

// Wait blocks until no job runs. Call it after the gRPC server stopped
// taking calls.
func (s *Server) Wait() { s.running.Wait() }

// runningJob is a job between its Execute call's start and end.
type runningJob struct {
	name    string
	started time.Time
	cancel  context.CancelCauseFunc
	job     *job.Job // nil until it started
	// ready is closed once job.Start returned (job set, or the start
	// failed): a savepoint asked for meanwhile waits for it.
	ready   chan struct{}
	config  map[string]string
	rates   *metrics.Sampler // set with job
	history *metrics.History // set with job
	// pins are the savepoint directories opened for the job's tasks to
	// write through; closed when the job ended (archive).
	pins []*beneath.Dir

	// Set when the job ended (archive).
	id    string
	ended time.Time
	final job.JobState
	err   error
}

// SetEndpoints makes the server call start with the configuration of
// every job it plans, before the job starts: the embedded runtime starts
// its REST API and Prometheus endpoint when a job asks for them (rest.port,
// metrics.reporter.prom.port). An error fails the job. Call before
// serving.
func (s *Server) SetEndpoints(start func(cfg map[string]string) error) { s.endpoints = start }

// CollectBatchBytes is about how large the batches of collected rows are
// that the server sends (job.Options.CollectBatchBytes): a client reads them
// when the job ends, and each message and batch costs it time whatever its
// size, so they are joined into batches of this size. Larger ones cost
// less CPU but overlap less with the job (measured: 4 MiB against 1 and 8
// MiB with integration/bench/collect_speed.py).
const CollectBatchBytes = 4 << 20

// New returns a server running jobs with opts (its Collect is the
// server's own). Config entries in defaults are added to every plan that
// does not set them. opts.Logger receives the server's and the jobs' logs.
func New(opts job.Options, defaults map[string]string) *Server {
	s := &Server{jobOptions: opts, defaults: defaults, log: logging.OrDiscard(opts.Logger)}
	s.jobsCtx, s.cancelJobs = context.WithCancelCause(context.Background())
	s.planSlots = make(chan struct{}, max(2, runtime.GOMAXPROCS(0)))
	s.mu.jobs = map[string]*runningJob{}
	return s
}

// plan checks a job's config against the known keys (an unknown key or a
// bad value fails it here, before anything runs) and plans it, restoring
// its snapshot's max parallelism when it restores one.
func (s *Server) plan(jp *planpb.JobPlan) (*plan.Graph, error) {
	g, _, err := s.planWithReplan(jp)
	return g, err
}

// planWithReplan plans a job as plan does, and returns the job's
// Options.Replan: the same plan and options with parallelism changed by
// uid, keeping the job's max parallelism (a rescale).
func (s *Server) planWithReplan(jp *planpb.JobPlan) (*plan.Graph, func(map[string]int) (*plan.Graph, error), error) {
	if len(s.defaults) > 0 {
		// A copy with the defaults added, sharing the nodes: they hold the
		// inline tables, which must not be copied once more per request.
		nodes := jp.Nodes
		jp.Nodes = nil
		c := proto.CloneOf(jp)
		jp.Nodes, c.Nodes = nodes, nodes
		jp = c
		if jp.Config == nil {
			jp.Config = map[string]string{}
		}
		for k, v := range s.defaults {
			if _, ok := jp.Config[k]; !ok {
				jp.Config[k] = v
			}
		}
	}
	if err := config.Known().Validate(jp.GetConfig()); err != nil {
		return nil, nil, err
	}
	// Paths and endpoints are the connectors' and the config's: checked on
	// the wire form, before anything is decoded or planned.
	if err := localPaths(jp); err != nil {
		return nil, nil, err
	}
	if err := s.checkPaths(jp); err != nil {
		return nil, nil, err
	}
	if err := s.checkEndpoints(jp); err != nil {
		return nil, nil, err
	}
	// The plan enters the runtime here: decoded (and validated) once;
	// everything below works on the model.
	model, err := plan.Decode(jp)
	if err != nil {
		return nil, nil, err
	}
	opts, err := job.PlanOptions(model)
	if err != nil {
		return nil, nil, err
	}
	// A client reads collected rows when the job ends.
	opts.CollectMustEnd = true
	g, err := plan.Plan(model, opts)
	if err != nil {
		return nil, nil, err
	}
	replan := func(parallelism map[string]int) (*plan.Graph, error) {
		o := opts
		o.Parallelism, o.RestoredMaxParallelism = parallelism, g.MaxParallelism
		return plan.Plan(model, o)
	}
	return g, replan, nil
}

// job returns the running job with id, or a NOT_FOUND status. A job the
// client already knows (its id was sent) may still be starting: job waits
// for its start, as long as ctx allows.
func (s *Server) job(ctx context.Context, id string) (*job.Job, error) {
	s.mu.Lock()
	r, ok := s.mu.jobs[id]
	s.mu.Unlock()
	if !ok {
		return nil, status.Errorf(codes.NotFound, "no running job has the id %q", id)
	}
	select {
	case <-r.ready:
	case <-ctx.Done():
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.job == nil {
		return nil, status.Errorf(codes.NotFound, "no running job has the id %q (it failed to start)", id)
	}
	return r.job, nil
}

// TriggerSavepoint takes a savepoint of a running job, and stops it after
// when asked.
func (s *Server) TriggerSavepoint(ctx context.Context, req *jobpb.SavepointRequest) (*jobpb.SavepointResponse, error) {
	dir, err := localPath("the savepoint directory", req.GetDirectory())
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	req.Directory = dir
	if err := s.checkPath("the savepoint directory", req.GetDirectory()); err != nil {
		return nil, status.Error(codes.PermissionDenied, err.Error())
	}
	j, err := s.job(ctx, req.GetJobId())
	if err != nil {
		return nil, err
	}
	if s.savepointChecked != nil {
		s.savepointChecked()
	}
	take := j.TriggerSavepoint
	if req.GetStop() {
		take = j.StopWithSavepoint
	}
	pin, err := s.pinSavepointDir(req.GetJobId(), req.GetDirectory())
	if err != nil {
		return nil, err
	}
	if pin != nil {
		dir = pin.Path()
	}
	path, err := take(ctx, dir)
	if err != nil {
		return nil, status.Error(codes.FailedPrecondition, err.Error())
	}
	if pin != nil {
		path = pin.Logical(path)
	}
	return &jobpb.SavepointResponse{Path: path}, nil
}

// ListJobs lists the running jobs, oldest first, then with include_ended
// the latest ended ones, oldest first.
func (s *Server) ListJobs(_ context.Context, req *jobpb.ListJobsRequest) (*jobpb.ListJobsResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	resp := &jobpb.ListJobsResponse{}
	for id, r := range s.mu.jobs {
		state := jobpb.JobState_JOB_STATE_CREATED
		if r.job != nil {
			state = jobStates[r.job.State()]
		}
		resp.Jobs = append(resp.Jobs, &jobpb.JobSummary{JobId: id, Name: r.name, State: state, ElapsedSeconds: time.Since(r.started).Seconds()})
	}
	slices.SortFunc(resp.Jobs, func(a, b *jobpb.JobSummary) int { return cmp.Compare(b.ElapsedSeconds, a.ElapsedSeconds) })
	if req.GetIncludeEnded() {
		for _, r := range s.mu.ended {
			resp.Jobs = append(resp.Jobs, &jobpb.JobSummary{JobId: r.id, Name: r.name, State: jobStates[r.final], ElapsedSeconds: r.ended.Sub(r.started).Seconds()})
		}
	}
	return resp, nil
}

// admit checks a request's plan against the limits of one request and
// waits for a planning slot: an error is the call's status
// (INVALID_ARGUMENT, or the call's end), logged without the request's
// content. On success, call the returned function once the plan is made.
func (s *Server) admit(ctx context.Context, method string, jp *planpb.JobPlan) (done func(), err error) {
	if err := checkLimits(jp); err != nil {
		s.log.Info("request refused: over a limit of one request", "method", method, "bytes", proto.Size(jp), "error", err)
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	select {
	case s.planSlots <- struct{}{}:
		return func() { <-s.planSlots }, nil
	case <-ctx.Done():
		return nil, status.FromContextError(ctx.Err()).Err()
	}
}

// Explain plans a job without running it.
func (s *Server) Explain(ctx context.Context, req *jobpb.ExplainRequest) (*jobpb.ExplainResponse, error) {
	planned, err := s.admit(ctx, "Explain", req.GetPlan())
	if err != nil {
		return nil, err
	}
	g, err := s.plan(req.GetPlan())
	planned()
	if err != nil {
		return &jobpb.ExplainResponse{Error: err.Error()}, nil
	}
	return &jobpb.ExplainResponse{Explain: g.Explain()}, nil
}

// Cancel cancels a running job; it does not wait for it to stop.
func (s *Server) Cancel(_ context.Context, req *jobpb.CancelRequest) (*jobpb.CancelResponse, error) {
	s.mu.Lock()
	r, ok := s.mu.jobs[req.GetJobId()]
	s.mu.Unlock()
	if ok {
		s.log.Info("job cancel requested", "job", req.GetJobId(), "name", r.name)
		r.cancel(ErrJobCanceled)
	}
	return &jobpb.CancelResponse{Found: ok}, nil
}

// Execute plans and runs a job, streaming its events.
func (s *Server) Execute(req *jobpb.ExecuteRequest, stream jobpb.JobService_ExecuteServer) error {
	s.running.Add(1)
	defer s.running.Done()
	var sendMu sync.Mutex
	send := func(ev *jobpb.JobEvent) error {
		sendMu.Lock()
		defer sendMu.Unlock()
		return stream.Send(ev)
	}
	planned, err := s.admit(stream.Context(), "Execute", req.GetPlan())
	if err != nil {
		return err
	}
	g, replan, err := s.planWithReplan(req.GetPlan())
	planned()
	if err != nil {
		sent := send(finished(jobpb.JobFinished_FAILED, &jobpb.JobError{Message: err.Error(), Kind: "PLAN"}, nil))
		s.log.Log(context.Background(), failureLevel(sent), "job rejected: it cannot be planned", "name", req.GetPlan().GetName(), "error", logText(err.Error()))
		return sent
	}
	if s.endpoints != nil {
		if err := s.endpoints(g.Config); err != nil {
			return send(finished(jobpb.JobFinished_FAILED, &jobpb.JobError{Message: err.Error(), Kind: "PLAN"}, nil))
		}
	}
	id := job.NewJobID()
	log := s.log.With("job", id, "name", g.Name)
	log.Info("job submitted", "detached", req.GetDetached())
	running := &runningJob{name: g.Name, started: time.Now(), ready: make(chan struct{}), config: g.Config}
	final, finalErr := job.Failed, error(nil)
	defer func() {
		select {
		case <-running.ready:
		default:
			close(running.ready) // the job never started
		}
	}()
	detached := req.GetDetached() && !hasCollectSink(g)
	ctx, cancel := context.WithCancelCause(s.jobsCtx)
	defer cancel(nil)
	if !detached {
		stop := context.AfterFunc(stream.Context(), func() { cancel(errClientGone) })
		defer stop()
	}
	running.cancel = cancel
	s.mu.Lock()
	s.mu.jobs[id] = running
	s.mu.Unlock()
	defer func() { s.archive(id, running, final, finalErr) }()
	warnings := g.Warnings()
	for _, w := range warnings {
		// Info: the client shows it (at the default level warn the
		// embedded runtime's log would show it a second time).
		log.Info("job submitted with a warning", "warning", w)
	}
	if err := send(&jobpb.JobEvent{Kind: &jobpb.JobEvent_Started{Started: &jobpb.JobStarted{JobId: id, Explain: g.Explain(), Warnings: warnings}}}); err != nil {
		return err
	}

	opts := s.jobOptions
	opts.JobID, opts.Replan = id, replan
	if opts.CollectBatchBytes == 0 {
		opts.CollectBatchBytes = CollectBatchBytes
	}
	collected := newCollectSender(ctx, send)
	collectedSent := sync.OnceFunc(collected.close)
	defer collectedSent()
	opts.Collect = func(op *plan.Operator, subtask int, b arrow.RecordBatch) error {
		defer b.Release()
		// Sized once: a buffer grown while the batch is written copies it
		// again at every doubling.
		buf := bytes.NewBuffer(make([]byte, 0, arrowipc.EncodedSize(b)))
		if err := arrowipc.EncodeBatch(buf, b, memory.DefaultAllocator); err != nil {
			return fmt.Errorf("server: encoding collected rows: %w", err)
		}
		data := buf.Bytes()
		return collected.send(&jobpb.JobEvent{Kind: &jobpb.JobEvent_Collected{Collected: &jobpb.CollectedBatch{
			Node: int32(op.NodeID), Subtask: int32(subtask), ArrowIpc: data,
		}}})
	}
	start := time.Now()
	// State changes are queued, never sent from the job's goroutines (a
	// slow client must not hold up a cancel); a job changes state at most
	// a handful of times, so the queue never fills.
	states := make(chan job.StateChange, 16)
	opts.OnStateChange = func(c job.StateChange) { states <- c }
	var reporter sync.WaitGroup
	reporter.Go(func() {
		for c := range states {
			_ = send(stateChanged(c.State, c.At.Sub(start)))
		}
	})
	_ = send(stateChanged(job.Created, 0))
	j, err := job.Start(ctx, g, opts)
	if err != nil {
		finalErr = err
		close(states)
		reporter.Wait()
		// The client follows the job's state: it ends FAILED, as REST says.
		_ = send(stateChanged(job.Failed, time.Since(start)))
		sent := send(finished(jobpb.JobFinished_FAILED, jobError(err), nil))
		log.Log(context.Background(), failureLevel(sent), "job failed to start", "error", logText(err.Error()))
		return sent
	}
	rates, history := startSampling(j)
	s.mu.Lock()
	running.job, running.rates, running.history = j, rates, history
	s.mu.Unlock()
	close(running.ready)
	if every := time.Duration(req.GetProgressIntervalMs()) * time.Millisecond; every > 0 {
		reporter.Go(func() { reportProgress(j, every, start, send) })
	}
	m, err := j.Wait()
	final, finalErr = j.State(), err
	collectedSent() // every row reaches the client before the job's end
	if err == nil {
		err = collected.failed() // a row that could not be sent fails the job
	}
	close(states)   // every change happens before Wait returns
	reporter.Wait() // no send may follow Execute's return
	metrics := progress(m, start)
	addFinalMetrics(metrics, j)
	log = log.With("duration", time.Since(start).Round(time.Millisecond))
	switch {
	case err == nil:
		log.Info("job ended", "state", job.Finished)
		return send(finished(jobpb.JobFinished_FINISHED, nil, metrics))
	case final == job.Canceled || errors.Is(err, ErrJobCanceled) || errors.Is(err, errClientGone):
		log.Info("job ended", "state", job.Canceled, "cause", err)
		// The client may be gone; the send is best effort.
		_ = send(finished(jobpb.JobFinished_CANCELED, &jobpb.JobError{Message: err.Error(), Kind: "CANCELED"}, metrics))
		return nil
	default:
		sent := send(finished(jobpb.JobFinished_FAILED, jobError(err), metrics))
		log.Log(context.Background(), failureLevel(sent), "job ended", "state", job.Failed, "error", logText(err.Error()))
		return sent
	}
}

// maxLoggedText bounds what a log record quotes of a client's request (an
// error that quotes a long literal of a plan): the log keeps its start.
const maxLoggedText = 1024

// logText is s for a log record, cut to maxLoggedText bytes.
func logText(s string) string {
	if len(s) <= maxLoggedText {
		return s
	}
	cut := maxLoggedText
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s... (%d bytes more)", s[:cut], len(s)-cut)
}

// failureLevel is the level of a job's failure in the log: info when the
// client that submitted the job got the error (it shows it; the log at the
// default level would print it a second time), warn when the send of it
// failed and the log is the only place left that has it.
func failureLevel(sendErr error) slog.Level {
	if sendErr != nil {
		return slog.LevelWarn
	}
	return slog.LevelInfo
}

func reportProgress(j *job.Job, every time.Duration, start time.Time, send func(*jobpb.JobEvent) error) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-j.Done():
			return
		case <-t.C:
			if send(&jobpb.JobEvent{Kind: &jobpb.JobEvent_Progress{Progress: progress(j.Snapshot(), start)}}) != nil {
				return
			}
		}
	}
}

func progress(m *job.Metrics, start time.Time) *jobpb.Progress {
	p := &jobpb.Progress{ElapsedSeconds: time.Since(start).Seconds()}
	if m == nil {
		return p
	}
	for _, op := range m.Operators {
		p.Operators = append(p.Operators, &jobpb.OperatorProgress{
			Name: op.Name, Uid: op.UID, Parallelism: int32(op.Parallelism), RowsIn: op.RowsIn, RowsOut: op.RowsOut,
			LateRecordsDropped: op.LateRecordsDropped,
		})
	}
	return p
}

// jobStates maps the runtime's states onto the protocol's.
var jobStates = map[job.JobState]jobpb.JobState{
	job.Created:    jobpb.JobState_JOB_STATE_CREATED,
	job.Running:    jobpb.JobState_JOB_STATE_RUNNING,
	job.Canceling:  jobpb.JobState_JOB_STATE_CANCELING,
	job.Canceled:   jobpb.JobState_JOB_STATE_CANCELED,
	job.Failing:    jobpb.JobState_JOB_STATE_FAILING,
	job.Failed:     jobpb.JobState_JOB_STATE_FAILED,
	job.Finished:   jobpb.JobState_JOB_STATE_FINISHED,
	job.Restarting: jobpb.JobState_JOB_STATE_RESTARTING,
}

func stateChanged(s job.JobState, elapsed time.Duration) *jobpb.JobEvent {
	return &jobpb.JobEvent{Kind: &jobpb.JobEvent_StateChanged{StateChanged: &jobpb.StateChanged{
		State: jobStates[s], ElapsedSeconds: elapsed.Seconds(),
	}}}
}

// addFinalMetrics adds to p's operators what the REST API shows of them
// at the end of the job: their vertex and, per subtask, the chain's task
// metrics (rates zero, as for an ended job) and their UDF metrics.
func addFinalMetrics(p *jobpb.Progress, j *job.Job) {
	byUID := map[string]*jobpb.OperatorProgress{}
	for _, op := range p.GetOperators() {
		byUID[op.GetUid()] = op
	}
	for _, v := range j.Vertices() {
		udfs := map[string][]*metrics.UDF{}
		for _, u := range v.UDFs {
			udfs[u.Op.UID] = u.Subtasks
		}
		for _, op := range v.Operators {
			out := byUID[op.UID]
			if out == nil {
				continue
			}
			out.VertexId = job.VertexID(v.Head.UID)
			for i, t := range v.Tasks {
				values := t.Read().Values(metrics.Rates{})
				if subs := udfs[op.UID]; i < len(subs) {
					maps.Copy(values, subs[i].Values())
				}
				out.Subtasks = append(out.Subtasks, &jobpb.SubtaskMetrics{Metrics: values})
			}
		}
	}
}

func finished(state jobpb.JobFinished_State, e *jobpb.JobError, m *jobpb.Progress) *jobpb.JobEvent {
	return &jobpb.JobEvent{Kind: &jobpb.JobEvent_Finished{Finished: &jobpb.JobFinished{State: state, Error: e, Metrics: m}}}
}

// jobError sorts a run's failure for the client.
func jobError(err error) *jobpb.JobError {
	e := &jobpb.JobError{Message: err.Error(), Kind: "RUNTIME"}
	var udfErr *bridge.UDFError
	var exitErr *bridge.WorkerExitError
	var taskErr *job.TaskError
	switch {
	case errors.As(err, &udfErr):
		e.Kind, e.Udf, e.Operator, e.Traceback = "UDF", udfErr.UDF, udfErr.Operator, udfErr.Traceback
	case errors.As(err, &exitErr):
		e.Kind, e.Udf, e.Operator = "WORKER", exitErr.UDF, exitErr.Operator
	case errors.Is(err, bridge.ErrWorkerLost), errors.Is(err, bridge.ErrWorkerStart):
		e.Kind = "WORKER"
	}
	if errors.As(err, &taskErr) && e.Operator == "" {
		e.Operator = taskErr.Operator
	}
	return e
}

// hasCollectSink says whether g sends rows to its client (collect sinks):
// such a job cannot run detached, its rows have nowhere else to go.
func hasCollectSink(g *plan.Graph) bool {
	return slices.ContainsFunc(g.Operators, func(op *plan.Operator) bool {
		return op.Kind == plan.KindSink && op.Node.GetSink().GetCollect() != nil
	})
}
