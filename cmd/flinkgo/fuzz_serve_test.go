package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/flinkgo/flinkgo/internal/fuzzseeds"
	"github.com/flinkgo/flinkgo/internal/poll"
	"github.com/flinkgo/flinkgo/runtime/proto/jobpb"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
)

// FuzzRoundsEnv sets the rounds of TestServeSurvivesMutatedRequests (200
// by default, what CI runs); FuzzSeedEnv its random seed, to replay a run.
const (
	FuzzRoundsEnv = "FLINKGO_FUZZ_ROUNDS"
	FuzzSeedEnv   = "FLINKGO_FUZZ_SEED"
)

// rawCodec sends requests as the bytes given, so that the server decodes
// mutated protobuf itself; answers are decoded as usual.
type rawCodec struct{}

type rawRequest []byte

func (rawCodec) Marshal(v any) ([]byte, error) {
	if r, ok := v.(rawRequest); ok {
		return r, nil
	}
	return proto.Marshal(v.(proto.Message))
}

func (rawCodec) Unmarshal(data []byte, v any) error { return proto.Unmarshal(data, v.(proto.Message)) }
func (rawCodec) Name() string                       { return "proto" }

// A real `flinkgo serve` on its default Unix socket gets mutated plans and
// inline Arrow tables, as Explain and Execute requests whose bytes it
// decodes itself: it answers each with an error or a result, stays up,
// and is left running no job.
func TestServeSurvivesMutatedRequests(t *testing.T) {
	rounds := 200
	if v := os.Getenv(FuzzRoundsEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("$%s=%q is not a positive number", FuzzRoundsEnv, v)
		}
		rounds = n
	}
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv(FuzzSeedEnv); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("$%s=%q is not a number", FuzzSeedEnv, v)
		}
		seed = n
	}
	t.Logf("%d rounds, seed %d (replay with %s=%d)", rounds, seed, FuzzSeedEnv, seed)
	rng := rand.New(rand.NewPCG(seed, seed))

	s := startServe(t, []string{"XDG_RUNTIME_DIR=" + t.TempDir()})
	conn, err := grpc.NewClient(s.address, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := jobpb.NewJobServiceClient(conn)
	plans := fuzzseeds.Plans()
	answers := map[string]int{}
	for round := range rounds {
		req := mutatedRequest(t, rng, plans[rng.IntN(len(plans))])
		what, err := send(conn, req)
		if err != nil {
			t.Fatalf("round %d (seed %d): %v\nserver stderr:\n%s", round, seed, err, s.stderr)
		}
		answers[what]++
	}
	t.Logf("answers: %v", answers)
	// Up, and every job ended or canceled (a cancel ends a job at once,
	// but asynchronously).
	var running []*jobpb.JobSummary
	allEnded := func() bool {
		jobs, err := client.ListJobs(context.Background(), &jobpb.ListJobsRequest{})
		if err != nil {
			t.Fatalf("the server does not answer after the fuzzing: %v\n%s", err, s.stderr)
		}
		running = jobs.GetJobs()
		return len(running) == 0
	}
	if !poll.Within(30*time.Second, allEnded) {
		t.Fatalf("jobs still running after every call ended: %v", running)
	}
	if out := s.stderr.String(); strings.Contains(out, "panic:") || strings.Contains(out, "fatal error") {
		t.Errorf("the server logged a panic:\n%s", out)
	}
}

// mutatedRequest is the bytes of an Explain/Execute request for a mutant
// of p: its fields or its inline tables' Arrow bytes mutated, and one time
// in four its protobuf bytes too.
func mutatedRequest(t *testing.T, rng *rand.Rand, p *planpb.JobPlan) []byte {
	p = proto.CloneOf(p)
	mutateTables := rng.IntN(3) == 0
	if !mutateTables {
		fuzzseeds.MutateFields(rng, p)
	}
	if mutateTables {
		for _, n := range p.GetNodes() {
			if a := n.GetSource().GetArrow(); a != nil {
				a.Ipc = fuzzseeds.Mutate(rng, a.GetIpc())
			}
		}
	}
	data, err := proto.Marshal(&jobpb.ExecuteRequest{Plan: p})
	if err != nil {
		t.Fatal(err)
	}
	if rng.IntN(4) == 0 {
		data = fuzzseeds.Mutate(rng, data)
	}
	return data
}

// send sends req as an Explain, then as an Execute (both start with the
// plan field), and says how the server answered; an error means it did
// not answer.
func send(conn *grpc.ClientConn, req []byte) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var explain jobpb.ExplainResponse
	if err := conn.Invoke(ctx, jobpb.JobService_Explain_FullMethodName, rawRequest(req), &explain, grpc.ForceCodec(rawCodec{})); err != nil {
		if !answered(err) || strings.Contains(status.Convert(err).Message(), "internal error in the flinkgo runtime") {
			return "", fmt.Errorf("Explain: %w", err)
		}
	}
	// A mutant may generate rows for ever: it is canceled once it runs.
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	stream, err := conn.NewStream(runCtx, &jobpb.JobService_ServiceDesc.Streams[0], jobpb.JobService_Execute_FullMethodName, grpc.ForceCodec(rawCodec{}))
	if err != nil {
		return "", err
	}
	if err := stream.SendMsg(rawRequest(req)); err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	if err := stream.CloseSend(); err != nil {
		return "", err
	}
	running := time.AfterFunc(2*time.Second, stop)
	defer running.Stop()
	for {
		var ev jobpb.JobEvent
		err := stream.RecvMsg(&ev)
		switch {
		case err == nil:
			if fin := ev.GetFinished(); fin != nil {
				return "job " + fin.GetState().String(), nil
			}
		case status.Code(err) == codes.Canceled && runCtx.Err() != nil && ctx.Err() == nil:
			return "canceled while running", nil
		case strings.Contains(status.Convert(err).Message(), "internal error in the flinkgo runtime"):
			// Answered, but a handler panicked: a bug to fix.
			return "", fmt.Errorf("Execute: a recovered panic: %w", err)
		case answered(err):
			return "status " + status.Code(err).String(), nil
		default:
			return "", fmt.Errorf("Execute: %w", err)
		}
	}
}

// answered reports whether err is the server's answer, not a sign that it
// is gone or hung.
func answered(err error) bool {
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Unknown, codes.Canceled:
		return false
	}
	return true
}

// A request over --max-message-size is refused before the server reads it
// (gRPC's RESOURCE_EXHAUSTED with the limit; the clients name the option);
// the server goes on serving smaller ones.
func TestServeMessageLimit(t *testing.T) {
	s := startServe(t, []string{"XDG_RUNTIME_DIR=" + t.TempDir()}, "--max-message-size", "1MiB")
	conn, err := grpc.NewClient(s.address, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := jobpb.NewJobServiceClient(conn)
	big := proto.CloneOf(fuzzseeds.Plans()[1])
	big.Nodes[0].GetSource().GetArrow().Ipc = make([]byte, 2<<20)
	stream, err := client.Execute(context.Background(), &jobpb.ExecuteRequest{Plan: big})
	if err == nil {
		_, err = stream.Recv()
	}
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "vs. 1048576") {
		t.Fatalf("a 2 MiB plan against a 1 MiB limit: %v", err)
	}
	small := fuzzseeds.Plans()[0]
	if what, err := send(conn, mustMarshal(t, &jobpb.ExecuteRequest{Plan: small})); err != nil || what != "job FINISHED" {
		t.Fatalf("a small plan after the refusal: %s %v\n%s", what, err, s.stderr)
	}
}

func mustMarshal(t *testing.T, m proto.Message) []byte {
	data, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestMaxMessageSizeFlag(t *testing.T) {
	for in, want := range map[string]int64{"1048576": 1 << 20, "64MiB": 64 << 20, "2KiB": 2048, "1GiB": 1 << 30} {
		var b byteSize
		if err := b.Set(in); err != nil || int64(b) != want {
			t.Errorf("%q: %d, %v; want %d", in, b, err, want)
		}
	}
	for _, bad := range []string{"", "0", "-1", "lots", "2GiB", "1.5MiB"} {
		var b byteSize
		if err := b.Set(bad); err == nil {
			t.Errorf("%q was accepted as %d", bad, b)
		}
	}
}
