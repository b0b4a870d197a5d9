package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flinkgo/flinkgo/internal/arrowipc"
	"github.com/flinkgo/flinkgo/internal/poll"
	"github.com/flinkgo/flinkgo/runtime/proto/jobpb"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
)

// `flinkgo rescale JOB uid=N` rescales a running job of a server at its
// next checkpoint and prints the history; bad arguments and refusals are
// clear errors.
func TestRescaleCommand(t *testing.T) {
	dir := t.TempDir()
	s := startServe(t, []string{"XDG_RUNTIME_DIR=" + dir}, "--allow-path", dir)
	conn, err := grpc.NewClient(s.address, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	schema, err := arrowipc.EncodeSchema(arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil))
	if err != nil {
		t.Fatal(err)
	}
	plan := &planpb.JobPlan{Name: "endless", Config: map[string]string{
		"execution.checkpointing.interval":                                 "100 ms",
		"execution.checkpointing.dir":                                      filepath.Join(dir, "checkpoints"),
		"jobmanager.adaptive-scheduler.executing.cooldown-after-rescaling": "0 ms",
	}, Nodes: []*planpb.Node{
		{Id: 1, Uid: "numbers", OutputSchema: schema, Kind: &planpb.Node_Source{Source: &planpb.Source{Kind: &planpb.Source_Datagen{
			Datagen: &planpb.DatagenSource{Rows: 1 << 40, RowsPerSecond: 1000}}}}},
		{Id: 2, Uid: "files", OutputSchema: schema, Inputs: []*planpb.Input{{Node: 1}}, Kind: &planpb.Node_Sink{Sink: &planpb.Sink{
			Kind: &planpb.Sink_File{File: &planpb.FileSink{Format: planpb.FileSource_CSV, Path: filepath.Join(dir, "out")}}}}},
	}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stream, err := jobpb.NewJobServiceClient(conn).Execute(ctx, &jobpb.ExecuteRequest{Plan: plan})
	if err != nil {
		t.Fatal(err)
	}
	var id string
	for id == "" {
		ev, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if f := ev.GetFinished(); f != nil {
			t.Fatalf("the job ended: %v", f)
		}
		id = ev.GetStarted().GetJobId()
	}
	env := []string{cliEnv + "=1", "XDG_RUNTIME_DIR=" + dir}
	out, err := runAs(t, false, env, "rescale", "--endpoint", s.address, id, "numbers=3", "files=2")
	if err != nil || !strings.Contains(out, "PENDING") || !strings.Contains(out, "next completed checkpoint") {
		t.Fatalf("rescale: %v\n%s", err, out)
	}
	completed := func() bool {
		out, err = runAs(t, false, env, "rescale", "--endpoint", s.address, id)
		if err != nil {
			t.Fatalf("rescale history: %v\n%s", err, out)
		}
		return strings.Contains(out, "COMPLETED")
	}
	if !poll.Within(60*time.Second, completed) { // hang guard
		t.Fatalf("the rescale did not complete:\n%s\nserver:\n%s", out, s.stderr)
	}
	if !strings.Contains(out, "COMPLETED_CHECKPOINT") || !strings.Contains(out, "numbers 1->3, files 1->2") {
		t.Fatalf("history:\n%s", out)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{id, "numbers"}, `"numbers" is not uid=N`},
		{[]string{id, "numbers=0"}, `"numbers=0" is not uid=N`},
		{[]string{id, "nope=2"}, `no operator or node has the uid "nope"`},
		{[]string{strings.Repeat("0", 32), "numbers=2"}, "NotFound"},
		{nil, "rescale needs a job id"},
	} {
		out, err := runAs(t, false, env, append([]string{"rescale", "--endpoint", s.address}, tc.args...)...)
		if err == nil || !strings.Contains(out, tc.want) {
			t.Errorf("rescale %v: %v, want an error with %q:\n%s", tc.args, err, tc.want, out)
		}
	}
}
