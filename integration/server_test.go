package integration_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/flinkgo/flinkgo/integration/testkit"
	"github.com/flinkgo/flinkgo/runtime/job"
	"github.com/flinkgo/flinkgo/runtime/proto/jobpb"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
	"github.com/flinkgo/flinkgo/runtime/server"
	"github.com/flinkgo/flinkgo/udf/bridge/pluginrunner"
)

// startServer serves the job service on a unix socket for the test.
func startServer(t *testing.T, mem memory.Allocator) jobpb.JobServiceClient {
	t.Helper()
	return serveJobs(t, server.New(job.Options{
		Allocator: mem,
		Runner: pluginrunner.Options{
			Python: testkit.Python(t),
			Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		},
	}, nil))
}

// serveJobs serves jobs' gRPC job service on a unix socket for the test.
func serveJobs(t *testing.T, jobs *server.Server) jobpb.JobServiceClient {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "s.sock")
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	jobpb.RegisterJobServiceServer(srv, jobs)
	go func() { _ = srv.Serve(lis) }()
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = conn.Close()
		srv.Stop()
		jobs.Wait()
	})
	return jobpb.NewJobServiceClient(conn)
}

// collectInstead turns every sink of the plan into a collect sink.
func collectInstead(jp *planpb.JobPlan) {
	for _, n := range jp.GetNodes() {
		if n.GetSink() != nil {
			n.Kind = &planpb.Node_Sink{Sink: &planpb.Sink{Kind: &planpb.Sink_Collect{Collect: &planpb.CollectSink{}}}}
		}
	}
}

// events reads a job's events until the stream ends.
func events(t *testing.T, stream jobpb.JobService_ExecuteClient) []*jobpb.JobEvent {
	t.Helper()
	var out []*jobpb.JobEvent
	for {
		ev, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ev)
	}
}

func TestServerRunsAJobAndStreamsRows(t *testing.T) {
	testkit.NoLeakedWorkers(t)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	client := startServer(t, mem)
	jp := testkit.JobPlan(t, pipelinePrelude+`
@udf("string")
def label(t):
    return "hot" if t > 25 else "ok"

env.from_pandas(readings).with_column("label", label(fg.col("temp"))).select("id", "label").write_csv(OUT)
plan = env.plan("server")
`, t.TempDir())
	collectInstead(jp)

	explained, err := client.Explain(context.Background(), &jobpb.ExplainRequest{Plan: jp})
	if err != nil || explained.GetError() != "" || !strings.Contains(explained.GetExplain(), "label") {
		t.Fatalf("explain: %v %v", explained, err)
	}
	stream, err := client.Execute(context.Background(), &jobpb.ExecuteRequest{Plan: jp, ProgressIntervalMs: 50})
	if err != nil {
		t.Fatal(err)
	}
	evs := events(t, stream)
	if evs[0].GetStarted().GetJobId() == "" {
		t.Fatalf("first event %v", evs[0])
	}
	last := evs[len(evs)-1].GetFinished()
	if last.GetState() != jobpb.JobFinished_FINISHED {
		t.Fatalf("job ended %v: %v", last.GetState(), last.GetError())
	}
	wantStates(t, evs, jobpb.JobState_JOB_STATE_CREATED, jobpb.JobState_JOB_STATE_RUNNING, jobpb.JobState_JOB_STATE_FINISHED)
	var labels []string
	for _, ev := range evs {
		c := ev.GetCollected()
		if c == nil {
			continue
		}
		r, err := ipc.NewReader(bytes.NewReader(c.GetArrowIpc()), ipc.WithAllocator(mem))
		if err != nil {
			t.Fatal(err)
		}
		for r.Next() {
			b := r.RecordBatch()
			for i := range int(b.NumRows()) {
				labels = append(labels, b.Column(0).ValueStr(i)+"="+b.Column(1).ValueStr(i))
			}
		}
		r.Release()
	}
	if len(labels) != 2000 {
		t.Fatalf("collected %d rows, want 2000", len(labels))
	}
	sort.Strings(labels)
	if !strings.HasPrefix(labels[0], "0=") {
		t.Errorf("first row %s", labels[0])
	}
	var sinkIn int64
	for _, op := range last.GetMetrics().GetOperators() {
		if strings.HasPrefix(op.GetName(), "collect") || strings.Contains(op.GetName(), "write_csv") || strings.Contains(op.GetName(), "sink") {
			sinkIn += op.GetRowsIn()
		}
	}
	if sinkIn != 2000 {
		t.Errorf("metrics: sink took %d rows, want 2000 (%v)", sinkIn, last.GetMetrics())
	}
}

// failingPipeline is a job whose UDF raises ZeroDivisionError at its first
// row (in `return 1 / 0`, which the traceback shows).
const failingPipeline = pipelinePrelude + `
@udf("float64")
def broken(t):
    return 1 / 0

env.from_pandas(readings).with_column("x", broken(fg.col("temp"))).write_csv(OUT)
plan = env.plan("failing")
`

func TestServerReportsUDFFailureAndCancel(t *testing.T) {
	testkit.NoLeakedWorkers(t)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	client := startServer(t, mem)

	failing := testkit.JobPlan(t, failingPipeline, t.TempDir())
	stream, err := client.Execute(context.Background(), &jobpb.ExecuteRequest{Plan: failing})
	if err != nil {
		t.Fatal(err)
	}
	evs := events(t, stream)
	fin := evs[len(evs)-1].GetFinished()
	if fin.GetState() != jobpb.JobFinished_FAILED || fin.GetError().GetKind() != "UDF" || fin.GetError().GetUdf() != "broken" ||
		!strings.Contains(fin.GetError().GetTraceback(), "return 1 / 0") {
		t.Fatalf("want the UDF failure with its traceback, got %v", fin)
	}
	wantStates(t, evs, jobpb.JobState_JOB_STATE_CREATED, jobpb.JobState_JOB_STATE_RUNNING,
		jobpb.JobState_JOB_STATE_FAILING, jobpb.JobState_JOB_STATE_FAILED)

	hanging := testkit.JobPlan(t, pipelinePrelude+`
import time

@udf("float64")
def hang(t):
    time.sleep(1000)
    return t

env.datagen(schema={"temp": "float64"}).with_column("x", hang(fg.col("temp"))).write_csv(OUT)
plan = env.plan("hanging")
`, t.TempDir())
	ctx, cancel := context.WithCancel(context.Background())
	stream, err = client.Execute(ctx, &jobpb.ExecuteRequest{Plan: hanging})
	if err != nil {
		t.Fatal(err)
	}
	started, err := stream.Recv()
	if err != nil || started.GetStarted() == nil {
		t.Fatalf("started: %v %v", started, err)
	}
	found, err := client.Cancel(context.Background(), &jobpb.CancelRequest{JobId: started.GetStarted().GetJobId()})
	if err != nil || !found.GetFound() {
		t.Fatalf("cancel: %v %v", found, err)
	}
	deadline := time.After(60 * time.Second) // hang guard
	evs = []*jobpb.JobEvent{started}
	for {
		ev, err := stream.Recv()
		if err != nil {
			t.Fatalf("stream ended without a finished event: %v", err)
		}
		evs = append(evs, ev)
		if fin := ev.GetFinished(); fin != nil {
			if fin.GetState() != jobpb.JobFinished_CANCELED {
				t.Fatalf("canceled job ended %v", fin)
			}
			wantStates(t, evs, jobpb.JobState_JOB_STATE_CREATED, jobpb.JobState_JOB_STATE_RUNNING,
				jobpb.JobState_JOB_STATE_CANCELING, jobpb.JobState_JOB_STATE_CANCELED)
			break
		}
		select {
		case <-deadline:
			t.Fatal("job did not stop after Cancel")
		default:
		}
	}
	cancel()
}

// wantStates checks the job's state changes among its events, in order.
func wantStates(t *testing.T, evs []*jobpb.JobEvent, want ...jobpb.JobState) {
	t.Helper()
	var got []jobpb.JobState
	for _, ev := range evs {
		if c := ev.GetStateChanged(); c != nil {
			got = append(got, c.GetState())
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("state changes %v, want %v", got, want)
	}
}
