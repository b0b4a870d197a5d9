package server

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/flinkgo/flinkgo/internal/fuzzseeds"
	"github.com/flinkgo/flinkgo/runtime/job"
	"github.com/flinkgo/flinkgo/runtime/proto/jobpb"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
)

// run executes p on s (in memory, no gRPC) and returns how it finished;
// ctx bounds it (a mutant may generate rows for ever).
func run(ctx context.Context, t testing.TB, s *Server, p *planpb.JobPlan) *jobpb.JobFinished {
	stream := &eventStream{ctx: ctx}
	if err := s.Execute(&jobpb.ExecuteRequest{Plan: p}, stream); err != nil {
		t.Fatalf("Execute returned %v instead of the job's end", err)
	}
	if n := len(stream.events); n > 0 {
		if fin := stream.events[n-1].GetFinished(); fin != nil {
			return fin
		}
	}
	t.Fatalf("the job's last event is not its end: %v", stream.events)
	return nil
}

// The fuzzers' seed plans run: every one finishes, but the table with
// crafted string offsets, which fails the job naming the column.
func TestSeedPlansRun(t *testing.T) {
	s := New(job.Options{}, nil)
	for _, p := range fuzzseeds.Plans() {
		fin := run(context.Background(), t, s, p)
		if p.GetName() == "crafted" {
			msg := fin.GetError().GetMessage()
			if fin.GetState() != jobpb.JobFinished_FAILED || !strings.Contains(msg, "invalid Arrow data") || !strings.Contains(msg, `column "name"`) {
				t.Errorf("the crafted table: %v", fin)
			}
			continue
		}
		if fin.GetState() != jobpb.JobFinished_FINISHED {
			t.Errorf("seed plan %s: %v", p.GetName(), fin)
		}
	}
}

// FuzzPlan decodes a plan from bytes, as the server does, optionally puts
// table in every inline-table source, and runs it: every input gives a
// plan error, a failed job or a result; never a panic (the fuzz engine
// reports one) or a hang past the call's deadline.
func FuzzPlan(f *testing.F) {
	for _, p := range fuzzseeds.Plans() {
		data, err := proto.Marshal(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, []byte(nil))
		if p.GetName() == "select-filter" {
			f.Add(data, fuzzseeds.Table(7))
			f.Add(data, fuzzseeds.CraftedStrings())
		}
	}
	s := New(job.Options{}, nil)
	f.Fuzz(func(t *testing.T, data, table []byte) {
		var p planpb.JobPlan
		if proto.Unmarshal(data, &p) != nil {
			return // gRPC refuses it before the server sees it
		}
		if table != nil {
			for _, n := range p.GetNodes() {
				if a := n.GetSource().GetArrow(); a != nil {
					a.Ipc = table
				}
			}
		}
		if _, err := s.Explain(context.Background(), &jobpb.ExplainRequest{Plan: &p}); err != nil {
			t.Fatalf("Explain returned %v instead of an answer", err)
		}
		ctx, cancel := context.WithTimeoutCause(context.Background(), 2*time.Second, errors.New("fuzz: the job ran past its time"))
		defer cancel()
		run(ctx, t, s, &p)
	})
}
