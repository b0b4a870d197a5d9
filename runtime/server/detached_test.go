package server

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"google.golang.org/grpc"

	"github.com/flinkgo/flinkgo/internal/arrowipc"
	"github.com/flinkgo/flinkgo/internal/logging/logtest"
	"github.com/flinkgo/flinkgo/internal/poll"
	"github.com/flinkgo/flinkgo/runtime/config"
	"github.com/flinkgo/flinkgo/runtime/job"
	"github.com/flinkgo/flinkgo/runtime/proto/jobpb"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
)

// endlessToPrint is a job plan: an endless datagen into a print sink.
func endlessToPrint(t *testing.T, name string) *planpb.JobPlan {
	t.Helper()
	schema, err := arrowipc.EncodeSchema(arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil))
	if err != nil {
		t.Fatal(err)
	}
	return &planpb.JobPlan{Name: name, DefaultParallelism: 1, Nodes: []*planpb.Node{
		{Id: 1, Name: "datagen", OutputSchema: schema, Kind: &planpb.Node_Source{Source: &planpb.Source{
			Kind: &planpb.Source_Datagen{Datagen: &planpb.DatagenSource{RowsPerSecond: 20}}}}},
		{Id: 2, Name: "print", OutputSchema: schema, Inputs: []*planpb.Input{{Node: 1}},
			Kind: &planpb.Node_Sink{Sink: &planpb.Sink{Kind: &planpb.Sink_Print{Print: &planpb.PrintSink{}}}}},
	}}
}

// leavingStream is the server side of a call whose client goes away when
// ctx ends: every send fails from then on.
type leavingStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *leavingStream) Send(*jobpb.JobEvent) error {
	if s.ctx.Err() != nil {
		return errors.New("test: the client is gone")
	}
	return nil
}

func (s *leavingStream) Context() context.Context { return s.ctx }

// executeInBackground runs Execute on a stream the test can break (the
// client going away) and returns the job's id once it runs.
func executeInBackground(t *testing.T, s *Server, req *jobpb.ExecuteRequest) (id string, leave context.CancelFunc, done <-chan error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, 1)
	go func() { errs <- s.Execute(req, &leavingStream{ctx: ctx}) }()
	running := func() bool {
		for _, in := range s.Jobs() {
			if in.State == job.Running {
				id = in.ID
				return true
			}
		}
		return false
	}
	if !poll.Within(time.Minute, running) {
		cancel()
		t.Fatal("the job did not start running")
	}
	return id, cancel, errs
}

// rowsOut is how many rows the job's source emitted so far.
func rowsOut(s *Server, id string) int64 {
	in, ok := s.JobInfo(id)
	if !ok || in.Job == nil {
		return -1
	}
	var n int64
	for _, op := range in.Job.Snapshot().Operators {
		n = max(n, op.RowsOut)
	}
	return n
}

// A detached job outlives its client, as Flink's `flink run -d`: the
// client's call ending (a script that exits) leaves it running, until it
// is canceled by id. It used to be canceled about 1 s after its client
// exited.
func TestDetachedJobOutlivesItsClient(t *testing.T) {
	s := New(job.Options{}, nil)
	defer func() { s.CancelAll(); s.Wait() }()
	id, leave, done := executeInBackground(t, s, &jobpb.ExecuteRequest{Plan: endlessToPrint(t, "detached"), Detached: true})
	leave() // the client is gone
	at := rowsOut(s, id)
	poll.Within(time.Minute, func() bool { return rowsOut(s, id) > at+20 }) // checked below, with the state
	in, _ := s.JobInfo(id)
	if in.State != job.Running || rowsOut(s, id) <= at+20 {
		t.Fatalf("after its client left the job is %s with %d rows out (%d when it left), want RUNNING and going on", in.State, rowsOut(s, id), at)
	}
	if resp, _ := s.Cancel(context.Background(), &jobpb.CancelRequest{JobId: id}); !resp.GetFound() {
		t.Fatal("Cancel did not find the detached job")
	}
	<-done
	if in, _ := s.JobInfo(id); in.State != job.Canceled {
		t.Fatalf("after Cancel: %s, want CANCELED", in.State)
	}
	ended := func(include bool) bool {
		resp, err := s.ListJobs(context.Background(), &jobpb.ListJobsRequest{IncludeEnded: include})
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range resp.GetJobs() {
			if j.GetJobId() == id {
				return j.GetState() == jobpb.JobState_JOB_STATE_CANCELED
			}
		}
		return false
	}
	if ended(false) || !ended(true) {
		t.Fatalf("ListJobs: the ended job listed without include_ended %v, with it %v; want only with it", ended(false), ended(true))
	}
}

// An attached job ends with its client, CANCELED, and the server logs it so
// (it logged FAILED "context canceled" while REST said CANCELED).
func TestAttachedJobEndsCanceledWithItsClient(t *testing.T) {
	var logs logtest.Buffer
	s := New(job.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))}, nil)
	id, leave, done := executeInBackground(t, s, &jobpb.ExecuteRequest{Plan: endlessToPrint(t, "attached")})
	leave()
	<-done
	if in, _ := s.JobInfo(id); in.State != job.Canceled {
		t.Fatalf("after its client left: %s, want CANCELED", in.State)
	}
	out := logs.String()
	if !strings.Contains(out, `msg="job ended" job=`+id) || !strings.Contains(out, "state=CANCELED") || strings.Contains(out, "state=FAILED") {
		t.Errorf("the server's log does not say CANCELED:\n%s", out)
	}
}

// A job that fails at its start (a checkpoint interval without a
// directory) ends FAILED in its state events too: a client following the
// states said CREATED forever.
func TestJobFailingAtStartSendsFailedState(t *testing.T) {
	s := New(job.Options{}, nil)
	p := endlessToPrint(t, "no checkpoint dir")
	p.Config = map[string]string{config.ConfigCheckpointInterval: "1 s"}
	stream := &eventStream{ctx: context.Background()}
	if err := s.Execute(&jobpb.ExecuteRequest{Plan: p, Detached: true}, stream); err != nil {
		t.Fatal(err)
	}
	var states []jobpb.JobState
	var fin *jobpb.JobFinished
	for _, ev := range stream.events {
		if sc := ev.GetStateChanged(); sc != nil {
			states = append(states, sc.GetState())
		}
		if f := ev.GetFinished(); f != nil {
			fin = f
		}
	}
	if len(states) == 0 || states[len(states)-1] != jobpb.JobState_JOB_STATE_FAILED {
		t.Errorf("states %v, want the last FAILED", states)
	}
	if fin == nil || fin.GetState() != jobpb.JobFinished_FAILED || !strings.HasPrefix(fin.GetError().GetMessage(), "invalid config: ") {
		t.Errorf("finished %v, want FAILED with the config's error", fin)
	}
}
