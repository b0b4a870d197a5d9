package server

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/flinkgo/flinkgo/internal/logging/logtest"
	"github.com/flinkgo/flinkgo/runtime/job"
	"github.com/flinkgo/flinkgo/runtime/operator"
	"github.com/flinkgo/flinkgo/runtime/operators"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/runtime/proto/jobpb"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
)

// panicking is a filter that panics in subtask 1 of the step its node's
// name says: "panic-in-new", "panic-in-process", "panic-in-finish",
// "panic-in-release"; any
// other name keeps every row.
var panicking = operator.Kind{
	Kind:   plan.KindFilter,
	Schema: func(_ *plan.Operator, in []*arrow.Schema) (*arrow.Schema, error) { return in[0], nil },
	New: func(c *operator.Context) (operator.Operator, error) {
		if c.Subtask == 1 && c.Op.Name == "panic-in-new" {
			panic("a bug in New")
		}
		return &panicker{step: c.Op.Name, subtask: c.Subtask}, nil
	},
}

type panicker struct {
	operator.Base
	step    string
	subtask int
}

func (p *panicker) Process(_ context.Context, _ int, b arrow.RecordBatch, emit operator.Emit) error {
	if p.subtask == 1 && p.step == "panic-in-process" {
		panic("a bug in Process")
	}
	b.Retain()
	return emit(context.Background(), b)
}

func (p *panicker) Finish(context.Context, operator.Emit) error {
	if p.subtask == 1 && p.step == "panic-in-finish" {
		panic("a bug in Finish")
	}
	return nil
}

func (p *panicker) Release() {
	if p.subtask == 1 && p.step == "panic-in-release" {
		panic(fmt.Sprintf("a bug in Release of %d", p.subtask))
	}
}

// A panic in an operator's constructor, Process, Finish or Release fails
// its job, naming the operator (not the head of its chain) and the subtask; the server goes on serving: a job
// submitted alongside finishes with every row, and a new one is answered.
func TestAPanickingOperatorFailsOnlyItsJob(t *testing.T) {
	var rows atomic.Int64
	reg, err := operators.Registry(operators.Options{SourceBatchRows: 100, Collect: func(_ *plan.Operator, _ int, b arrow.RecordBatch) error {
		rows.Add(b.NumRows())
		b.Release()
		return nil
	}}).With(panicking)
	if err != nil {
		t.Fatal(err)
	}
	var logs logtest.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	client := serveInProcess(t, New(job.Options{Registry: reg, Logger: log}, nil), log)

	var wg sync.WaitGroup
	outcomes := map[string]*jobpb.JobFinished{}
	var mu sync.Mutex
	for _, step := range []string{"panic-in-new", "panic-in-process", "panic-in-finish", "panic-in-release", "fine"} {
		wg.Go(func() {
			fin := execute(t, client, filtered(t, step, 10_000))
			mu.Lock()
			outcomes[step] = fin
			mu.Unlock()
		})
	}
	wg.Wait()
	for _, step := range []string{"panic-in-new", "panic-in-process", "panic-in-finish", "panic-in-release"} {
		fin := outcomes[step]
		if fin.GetState() != jobpb.JobFinished_FAILED {
			t.Errorf("%s: the job ended %v, want FAILED", step, fin)
			continue
		}
		msg := fin.GetError().GetMessage()
		for _, want := range []string{`operator "` + step + `" (uid filter-` + step + `, subtask 1)`, "internal error", "panic: a bug in"} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s: the failure does not say %q:\n%s", step, want, msg)
			}
		}
	}
	if fin := outcomes["fine"]; fin.GetState() != jobpb.JobFinished_FINISHED {
		t.Errorf("the job beside the panicking ones ended %v", fin)
	}
	// Every row of the good job (the failed ones may have sent some too).
	if got := rows.Load(); got < 10_000 {
		t.Errorf("%d rows collected, want at least the good job's 10000", got)
	}
	if fin := execute(t, client, filtered(t, "fine", 10)); fin.GetState() != jobpb.JobFinished_FINISHED {
		t.Errorf("a job after the panics ended %v", fin)
	}
}

// filtered is datagen (parallelism 2) → the test filter named step → collect.
func filtered(t *testing.T, step string, rows int64) *planpb.JobPlan {
	p := datagenToCollect(t, step, rows)
	p.DefaultParallelism = 2
	schema := p.Nodes[0].OutputSchema
	p.Nodes = []*planpb.Node{p.Nodes[0],
		{Id: 3, Name: step, Uid: "filter-" + step, OutputSchema: schema, Inputs: []*planpb.Input{{Node: 1}},
			Kind: &planpb.Node_Filter{Filter: &planpb.Filter{Predicate: &planpb.Expr{Kind: &planpb.Expr_Column{Column: "id"}}}}},
		p.Nodes[1]}
	p.Nodes[2].Inputs[0].Node = 3
	return p
}

// serveInProcess serves s with the server's guard on a Unix socket, as
// `flinkgo serve` does, and returns a client of it.
func serveInProcess(t *testing.T, s *Server, log *slog.Logger) jobpb.JobServiceClient {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "s.sock")
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(Guard(log, DefaultMaxMessageBytes)...)
	jobpb.RegisterJobServiceServer(srv, s)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(lis)
	}()
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.Close()
		srv.Stop()
		<-done
		s.Wait()
	})
	return jobpb.NewJobServiceClient(conn)
}

// execute runs p and returns how it finished.
func execute(t *testing.T, c jobpb.JobServiceClient, p *planpb.JobPlan) *jobpb.JobFinished {
	stream, err := c.Execute(context.Background(), &jobpb.ExecuteRequest{Plan: p})
	if err != nil {
		t.Error(err)
		return nil
	}
	for {
		ev, err := stream.Recv()
		if err == io.EOF {
			t.Errorf("%s: the stream ended without the job's end", p.GetName())
			return nil
		}
		if err != nil {
			t.Errorf("%s: %v", p.GetName(), err)
			return nil
		}
		if fin := ev.GetFinished(); fin != nil {
			return fin
		}
	}
}
