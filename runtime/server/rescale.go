package server

import (
	"context"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/flinkgo/flinkgo/runtime/job"
	"github.com/flinkgo/flinkgo/runtime/proto/jobpb"
)

// Rescale sets the parallelism of operators of a running job (Job.Rescale):
// it returns at once, and the job rescales at its next completed
// checkpoint.
func (s *Server) Rescale(ctx context.Context, req *jobpb.RescaleRequest) (*jobpb.RescaleResponse, error) {
	if len(req.GetParallelism()) == 0 {
		return nil, status.Error(codes.InvalidArgument, "a rescale names the parallelism of at least one uid (uid=N)")
	}
	j, err := s.job(ctx, req.GetJobId())
	if err != nil {
		return nil, err
	}
	want := make(map[string]int, len(req.GetParallelism()))
	for uid, p := range req.GetParallelism() {
		want[uid] = int(p)
	}
	r, err := j.Rescale(want)
	if err != nil {
		return nil, status.Error(codes.FailedPrecondition, err.Error())
	}
	s.log.Info("job rescale requested", "job", j.ID(), "rescale", r.ID, "status", r.Status, "parallelism", want)
	resp := rescaleResponse(j)
	resp.Rescale = RescaleInfoProto(r)
	return resp, nil
}

// RescaleHistory returns a running job's rescales and its current
// parallelism.
func (s *Server) RescaleHistory(ctx context.Context, req *jobpb.RescaleHistoryRequest) (*jobpb.RescaleResponse, error) {
	j, err := s.job(ctx, req.GetJobId())
	if err != nil {
		return nil, err
	}
	return rescaleResponse(j), nil
}

func rescaleResponse(j *job.Job) *jobpb.RescaleResponse {
	resp := &jobpb.RescaleResponse{Parallelism: map[string]int32{}}
	for _, r := range j.Rescales() {
		resp.History = append(resp.History, RescaleInfoProto(r))
	}
	for uid, p := range j.Parallelism() {
		resp.Parallelism[uid] = int32(p)
	}
	return resp
}

// RescaleInfoProto converts one rescale for the job service (and for a
// REST handler that shares the protocol's shape).
func RescaleInfoProto(r job.RescaleInfo) *jobpb.RescaleInfo {
	ms := func(t time.Time) int64 {
		if t.IsZero() {
			return 0
		}
		return t.UnixMilli()
	}
	out := &jobpb.RescaleInfo{
		Id: r.ID, TriggerCause: r.TriggerCause, Trigger: r.Trigger, Status: r.Status, Reason: r.Reason,
		CheckpointId: r.CheckpointID, RequestedAtMs: ms(r.RequestedAt), StartedAtMs: ms(r.StartedAt), EndedAtMs: ms(r.EndedAt),
		DurationSeconds: r.Duration().Seconds(), Mode: r.Mode, ModeNote: r.ModeNote,
	}
	for _, v := range r.Vertices {
		out.Vertices = append(out.Vertices, &jobpb.RescaleVertex{Uid: v.UID, Name: v.Name, Before: int32(v.Before), After: int32(v.After),
			WorkersBefore: int32(v.WorkersBefore), WorkersAfter: int32(v.WorkersAfter)})
	}
	return out
}

// LookupJob returns the running job with id (nil when none), for other
// front ends of the runtime (a REST handler) that call the job's own API:
// Rescale, Rescales, Parallelism.
func (s *Server) LookupJob(ctx context.Context, id string) *job.Job {
	j, err := s.job(ctx, id)
	if err != nil {
		return nil
	}
	return j
}
