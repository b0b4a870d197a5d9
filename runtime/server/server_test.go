package server

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"google.golang.org/grpc"

	"github.com/flinkgo/flinkgo/internal/arrowipc"
	"github.com/flinkgo/flinkgo/internal/logging/logtest"
	"github.com/flinkgo/flinkgo/runtime/job"
	"github.com/flinkgo/flinkgo/runtime/proto/jobpb"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
)

// eventStream is the server side of one Execute call, in memory.
type eventStream struct {
	grpc.ServerStream
	ctx    context.Context
	events []*jobpb.JobEvent
	// broken makes every Send fail, as to a client that went away.
	broken bool
}

func (s *eventStream) Send(ev *jobpb.JobEvent) error {
	if s.broken {
		return errors.New("test: the client is gone")
	}
	s.events = append(s.events, ev)
	return nil
}

func (s *eventStream) Context() context.Context { return s.ctx }

// datagenToCollect is a job plan: rows generated rows into a collect sink.
func datagenToCollect(t *testing.T, name string, rows int64) *planpb.JobPlan {
	t.Helper()
	schema, err := arrowipc.EncodeSchema(arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil))
	if err != nil {
		t.Fatal(err)
	}
	return &planpb.JobPlan{Name: name, DefaultParallelism: 1, Nodes: []*planpb.Node{
		{Id: 1, Name: "datagen", OutputSchema: schema, Kind: &planpb.Node_Source{Source: &planpb.Source{
			Kind: &planpb.Source_Datagen{Datagen: &planpb.DatagenSource{Rows: rows}}}}},
		{Id: 2, Name: "collect", OutputSchema: schema, Inputs: []*planpb.Input{{Node: 1}},
			Kind: &planpb.Node_Sink{Sink: &planpb.Sink{Kind: &planpb.Sink_Collect{Collect: &planpb.CollectSink{}}}}},
	}}
}

// The server logs a job's submission and end at info with its id and
// name; a plan it rejects at info when the client got the error (the
// client shows it: at the default level warn it would be printed twice),
// at warn when it could not be sent.
func TestJobSubmissionAndEndAreLogged(t *testing.T) {
	var logs logtest.Buffer
	s := New(job.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))}, nil)
	stream := &eventStream{ctx: context.Background()}
	if err := s.Execute(&jobpb.ExecuteRequest{Plan: datagenToCollect(t, "numbers", 100)}, stream); err != nil {
		t.Fatal(err)
	}
	var id string
	for _, ev := range stream.events {
		if st := ev.GetStarted(); st != nil {
			id = st.GetJobId()
		}
	}
	if id == "" {
		t.Fatalf("no job started: %v", stream.events)
	}
	out := logs.String()
	for _, want := range []string{
		`level=INFO msg="job submitted" job=` + id + ` name=numbers`,
		`level=INFO msg="job ended" job=` + id + ` name=numbers duration=`,
		"state=FINISHED",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("logs lack %q:\n%s", want, out)
		}
	}

	bad := datagenToCollect(t, "broken", 100)
	bad.Nodes[1].Inputs[0].Node = 7 // no such node
	if err := s.Execute(&jobpb.ExecuteRequest{Plan: bad}, &eventStream{ctx: context.Background()}); err != nil {
		t.Fatal(err)
	}
	if out := logs.String(); !strings.Contains(out, `level=INFO msg="job rejected: it cannot be planned" name=broken error=`) {
		t.Errorf("the rejected plan the client was told of was not logged at info:\n%s", out)
	}
	if err := s.Execute(&jobpb.ExecuteRequest{Plan: bad}, &eventStream{ctx: context.Background(), broken: true}); err == nil {
		t.Fatal("Execute on a broken stream returned no error")
	}
	if out := logs.String(); !strings.Contains(out, `level=WARN msg="job rejected: it cannot be planned" name=broken error=`) {
		t.Errorf("the rejected plan nobody was told of was not logged at warn:\n%s", out)
	}
}
