package main

import (
	"bytes"
	"context"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/flinkgo/flinkgo/internal/fuzzseeds"
	"github.com/flinkgo/flinkgo/runtime/proto/jobpb"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
)

// dialServe connects to a `flinkgo serve` subprocess.
func dialServe(t *testing.T, s *serveProcess) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(s.address, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(1<<30)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// executeRaw sends req's bytes as an Execute call and returns the status it
// ends with, or the message of a job that failed.
func executeRaw(t *testing.T, conn *grpc.ClientConn, req []byte) (codes.Code, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stream, err := conn.NewStream(ctx, &jobpb.JobService_ServiceDesc.Streams[0], jobpb.JobService_Execute_FullMethodName, grpc.ForceCodec(rawCodec{}))
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.SendMsg(rawRequest(req)); err != nil && err != io.EOF {
		t.Fatal(err)
	}
	if err := stream.CloseSend(); err != nil {
		t.Fatal(err)
	}
	for {
		var ev jobpb.JobEvent
		if err := stream.RecvMsg(&ev); err != nil {
			return status.Code(err), status.Convert(err).Message()
		}
		if f := ev.GetFinished(); f != nil {
			return codes.OK, f.GetState().String() + ": " + f.GetError().GetMessage()
		}
	}
}

// explainRaw sends req's bytes as an Explain call.
func explainRaw(t *testing.T, conn *grpc.ClientConn, req []byte) (codes.Code, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var resp jobpb.ExplainResponse
	err := conn.Invoke(ctx, jobpb.JobService_Explain_FullMethodName, rawRequest(req), &resp, grpc.ForceCodec(rawCodec{}))
	if err != nil {
		return status.Code(err), status.Convert(err).Message()
	}
	return codes.OK, resp.GetError()
}

// manyColumns is the select-filter seed plan selecting n columns.
func manyColumns(n int) *planpb.JobPlan {
	p := fuzzseeds.Plans()[1]
	sel := p.Nodes[1].GetSelect()
	sel.Columns = make([]*planpb.NamedExpr, n)
	for i := range sel.Columns {
		sel.Columns[i] = &planpb.NamedExpr{Name: "c" + strconv.Itoa(i), Expr: &planpb.Expr{Kind: &planpb.Expr_Column{Column: "id"}}}
	}
	sel.Columns[0].Name = "id"
	return p
}

// A request within the message cap that would cost the server far more
// than its bytes (a job name of megabytes, a select of 100 000s of
// columns) is refused before it is planned: INVALID_ARGUMENT saying which
// limit, without the request's content in the answer or the log. Before,
// the 8 MiB name was planned, explained, sent back and logged (the log
// grew by megabytes per request), and the columns were planned.
func TestServeRefusesRequestsOverTheLimits(t *testing.T) {
	s := startServe(t, []string{"XDG_RUNTIME_DIR=" + t.TempDir()}, "--log-level", "debug")
	conn := dialServe(t, s)
	name := strings.Repeat("secret-name-", 8<<20/12)
	bigName := fuzzseeds.Plans()[0]
	bigName.Name = name
	wide := manyColumns(100_000)
	cases := []struct {
		what string
		plan *planpb.JobPlan
		want string
	}{
		{"an 8 MiB job name", bigName, "JobPlan.name is " + strconv.Itoa(len(name)) + " bytes long; names may be at most 4096 bytes"},
		{"a select of 100 000 columns", wide, "selects 100000 columns; a node may have at most 10000"},
	}
	for _, c := range cases {
		req := mustMarshal(t, &jobpb.ExecuteRequest{Plan: c.plan})
		for call, send := range map[string]func(*testing.T, *grpc.ClientConn, []byte) (codes.Code, string){"Execute": executeRaw, "Explain": explainRaw} {
			code, msg := send(t, conn, req)
			if code != codes.InvalidArgument || !strings.Contains(msg, c.want) {
				t.Errorf("%s of %s: %v %q; want INVALID_ARGUMENT with %q", call, c.what, code, limitText(msg), c.want)
			}
			if strings.Contains(msg, "secret-name-secret-name-") {
				t.Errorf("%s of %s: the answer quotes the request's content", call, c.what)
			}
		}
	}
	// A plan within the limits still runs.
	if code, msg := executeRaw(t, conn, mustMarshal(t, &jobpb.ExecuteRequest{Plan: manyColumns(1000)})); code != codes.OK || !strings.HasPrefix(msg, "FINISHED") {
		t.Errorf("a select of 1000 columns: %v %s", code, msg)
	}
	log := s.stderr.String()
	if strings.Contains(log, "secret-name-secret-name-") || len(log) > 64<<10 {
		t.Errorf("the server's log holds the refused requests' content (%d bytes):\n%s", len(log), limitText(log))
	}
	if strings.Count(log, "over a limit of one request") < 4 {
		t.Errorf("the server's log does not say it refused the requests:\n%s", limitText(log))
	}
}

func limitText(s string) string {
	if len(s) > 2000 {
		return s[:2000] + "..."
	}
	return s
}

// A request that is not valid protobuf (malformed bytes; a string that is
// not UTF-8, which protobuf refuses) and a plan whose inline table names a
// column with bytes that are not UTF-8 (which protobuf does not check, and
// which no answer can carry) are INVALID_ARGUMENT with a message saying
// what is wrong. Before, the first two were INTERNAL "error unmarshalling
// request", and the third INTERNAL "error while marshaling".
func TestServeRefusesUndecodableRequests(t *testing.T) {
	s := startServe(t, []string{"XDG_RUNTIME_DIR=" + t.TempDir()})
	conn := dialServe(t, s)
	malformed := []byte{0x0a, 0x50, 0x0a, 0x03} // plan: 80 bytes announced, 2 given
	var badName []byte                          // ExecuteRequest{plan: {name: "job\xff"}}
	inner := protowire.AppendTag(nil, 1, protowire.BytesType)
	inner = protowire.AppendString(inner, "job\xff")
	badName = protowire.AppendTag(badName, 1, protowire.BytesType)
	badName = protowire.AppendBytes(badName, inner)
	badColumn := fuzzseeds.Plans()[5]
	badColumn.Nodes[0].GetSource().GetArrow().Ipc = tableWithColumn(t, "id\xff")
	cases := []struct {
		what string
		req  []byte
		want string
	}{
		{"malformed protobuf", malformed, "not a valid protobuf message"},
		{"a job name that is not UTF-8", badName, "UTF-8"},
		{"an inline table's column name that is not UTF-8", mustMarshal(t, &jobpb.ExecuteRequest{Plan: badColumn}), "name of column 0 is not valid UTF-8 (at byte 2)"},
	}
	for _, c := range cases {
		for call, send := range map[string]func(*testing.T, *grpc.ClientConn, []byte) (codes.Code, string){"Execute": executeRaw, "Explain": explainRaw} {
			code, msg := send(t, conn, c.req)
			if code != codes.InvalidArgument || !strings.Contains(msg, c.want) {
				t.Errorf("%s of %s: %v %q; want INVALID_ARGUMENT with %q", call, c.what, code, msg, c.want)
			}
		}
	}
	// The server goes on.
	if code, msg := executeRaw(t, conn, mustMarshal(t, &jobpb.ExecuteRequest{Plan: fuzzseeds.Plans()[0]})); code != codes.OK || !strings.HasPrefix(msg, "FINISHED") {
		t.Errorf("a valid plan after the refusals: %v %s", code, msg)
	}
}

// tableWithColumn is an Arrow IPC stream of one int64 column named name.
func tableWithColumn(t *testing.T, name string) []byte {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{{Name: name, Type: arrow.PrimitiveTypes.Int64}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2}, nil)
	rec := b.NewRecordBatch()
	defer rec.Release()
	var out bytes.Buffer
	w := ipc.NewWriter(&out, ipc.WithSchema(schema))
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}
