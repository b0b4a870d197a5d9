package server

import (
	"cmp"
	"slices"
	"time"

	"github.com/flinkgo/flinkgo/runtime/job"
	"github.com/flinkgo/flinkgo/runtime/metrics"
)

// archived is how many ended jobs the server remembers for Jobs (Flink's
// jobstore.max-capacity, smaller).
const archived = 100

// samplePeriod is how often a running job's task metrics are sampled for
// their rates; rateWindow the span the rates cover.
const (
	samplePeriod = time.Second
	rateWindow   = 10 * time.Second
	// HistoryPoints is how many samplings of each vertex's figures a job
	// keeps for the dashboard's charts: the last 5 minutes, about 21 KiB
	// per vertex.
	HistoryPoints = 300
	// HistoryPeriod is the time between two of them.
	HistoryPeriod = samplePeriod
)

// JobInfo is what the server knows of one job, running or ended: what the
// REST API (package rest) shows.
type JobInfo struct {
	ID, Name string
	// Config is the job's plan configuration, the server's defaults added.
	Config  map[string]string
	Started time.Time
	// Ended is zero while the job runs.
	Ended time.Time
	// State is the job's state (Created until it started).
	State job.JobState
	// Job is nil when the job never started (its plan or start failed).
	Job *job.Job
	// Err is the failure of a job that ended FAILED or CANCELED.
	Err error
	// Rates gives the per-second figures of the tasks of Job.Vertices()
	// (after a rescale, the new ones); nil when Job is nil.
	Rates *metrics.Sampler
	// History is each vertex's figures at the latest samplings (at most
	// HistoryPoints); nil when Job is nil.
	History *metrics.History
}

// info returns r's JobInfo. Call with s.mu held.
func (r *runningJob) info(id string) JobInfo {
	in := JobInfo{ID: id, Name: r.name, Config: r.config, Started: r.started, Ended: r.ended,
		State: job.Created, Job: r.job, Err: r.err, Rates: r.rates, History: r.history}
	switch {
	case !r.ended.IsZero():
		in.State = r.final
	case r.job != nil:
		in.State = r.job.State()
	}
	return in
}

// Jobs returns the running jobs and the latest ended ones, newest first.
func (s *Server) Jobs() []JobInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []JobInfo
	for id, r := range s.mu.jobs {
		out = append(out, r.info(id))
	}
	for _, r := range s.mu.ended {
		out = append(out, r.info(r.id))
	}
	slices.SortFunc(out, func(a, b JobInfo) int { return cmp.Compare(b.Started.UnixNano(), a.Started.UnixNano()) })
	return out
}

// JobInfo returns the job with id, running or among the latest ended.
func (s *Server) JobInfo(id string) (JobInfo, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.mu.jobs[id]; ok {
		return r.info(id), true
	}
	for _, r := range s.mu.ended {
		if r.id == id {
			return r.info(id), true
		}
	}
	return JobInfo{}, false
}

// startSampling starts sampling j's task metrics until it ends, adding
// each vertex's figures to a history at every sampling.
func startSampling(j *job.Job) (*metrics.Sampler, *metrics.History) {
	sm := metrics.NewSampler(func() []*metrics.Task {
		var tasks []*metrics.Task
		for _, v := range j.Vertices() {
			tasks = append(tasks, v.Tasks...)
		}
		return tasks
	}, rateWindow)
	history := metrics.NewHistory(HistoryPoints)
	go func() {
		t := time.NewTicker(samplePeriod)
		defer t.Stop()
		for {
			select {
			case <-j.Done():
				return
			case now := <-t.C:
				sm.Sample(now)
				recordVertices(j, sm, history, now)
			}
		}
	}()
	return sm, history
}

// recordVertices adds each of j's vertices' figures, as the sampler has
// them now, to history.
func recordVertices(j *job.Job, sm *metrics.Sampler, history *metrics.History, now time.Time) {
	for _, v := range j.Vertices() {
		rates := make([]metrics.Rates, len(v.Tasks))
		totals := make([]metrics.Totals, len(v.Tasks))
		for i, t := range v.Tasks {
			rates[i], totals[i] = sm.Rates(t), t.Read()
		}
		history.Add(job.VertexID(v.Head.UID), metrics.VertexPointOf(now, rates, totals))
	}
}

// archive moves an ended job from the running ones to the ended ones.
func (s *Server) archive(id string, r *runningJob, final job.JobState, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r.id, r.ended, r.final, r.err = id, time.Now(), final, err
	delete(s.mu.jobs, id)
	for _, pin := range r.pins {
		_ = pin.Close() // the job's tasks, which wrote through it, ended
	}
	r.pins = nil
	s.mu.ended = append(s.mu.ended, r)
	if len(s.mu.ended) > archived {
		s.mu.ended = s.mu.ended[1:]
	}
}
