// Command requestmem measures what one job-service request costs a
// `flinkgo serve` process: for each case it starts the given binary on a
// private Unix socket, sends the request(s), waits for the answer and
// reads the server's peak resident set (VmHWM in /proc/PID/status) and the
// size of its log. A fresh server per case, so that each peak is its own.
//
//	go build -o /tmp/flinkgo ./cmd/flinkgo
//	go run ./integration/bench/requestmem -binary /tmp/flinkgo
//
// Cases: an Execute whose job name is 16, 32 or 63 MiB (under the default
// 64 MiB --max-message-size), four 63 MiB names at once, and a plan whose
// select has 10k, 100k or 1M columns; and what the server answers a
// request that is not protobuf, a job name and a column name that are not
// UTF-8.
package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/flinkgo/flinkgo/internal/fuzzseeds"
	"github.com/flinkgo/flinkgo/runtime/proto/jobpb"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
)

func main() {
	binary := flag.String("binary", "", "the flinkgo binary to measure")
	flag.Parse()
	if *binary == "" {
		fmt.Fprintln(os.Stderr, "requestmem: -binary is required")
		os.Exit(2)
	}
	type testCase struct {
		name    string
		copies  int
		request func() []byte
	}
	var cases []testCase
	for _, mib := range []int{16, 32, 63} {
		cases = append(cases, testCase{name: fmt.Sprintf("name %d MiB", mib), copies: 1, request: func() []byte { return marshal(bigName(mib << 20)) }})
	}
	cases = append(cases, testCase{name: "4 x name 63 MiB", copies: 4, request: func() []byte { return marshal(bigName(63 << 20)) }})
	for _, n := range []int{10_000, 100_000, 1_000_000} {
		cases = append(cases, testCase{name: fmt.Sprintf("select %d columns", n), copies: 1, request: func() []byte { return marshal(manyColumns(n)) }})
	}
	cases = append(cases,
		testCase{name: "malformed protobuf", copies: 1, request: func() []byte { return []byte{0x0a, 0x50, 0x0a, 0x03} }},
		testCase{name: "job name not UTF-8", copies: 1, request: func() []byte {
			inner := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "job\xff")
			return protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), inner)
		}},
		testCase{name: "column name not UTF-8", copies: 1, request: func() []byte { return marshal(badColumnName()) }},
	)
	fmt.Printf("| request | request bytes | answer | peak RSS (VmHWM) | log bytes |\n|---|---|---|---|---|\n")
	for _, c := range cases {
		req := c.request()
		answer, hwm, logBytes, err := measure(*binary, req, c.copies)
		if err != nil {
			fmt.Fprintf(os.Stderr, "requestmem: %s: %v\n", c.name, err)
			os.Exit(1)
		}
		fmt.Printf("| %s | %.1f MiB | %s | %d MiB | %d |\n", c.name, float64(len(req))/(1<<20), answer, hwm>>10, logBytes)
	}
}

func marshal(req *jobpb.ExecuteRequest) []byte {
	data, err := proto.Marshal(req)
	if err != nil {
		panic(err)
	}
	return data
}

// badColumnName is a plan whose inline table names its column with bytes
// that are not UTF-8 (protobuf does not look inside the Arrow bytes).
func badColumnName() *jobpb.ExecuteRequest {
	schema := arrow.NewSchema([]arrow.Field{{Name: "id\xff", Type: arrow.PrimitiveTypes.Int64}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2}, nil)
	rec := b.NewRecordBatch()
	defer rec.Release()
	var out bytes.Buffer
	w := ipc.NewWriter(&out, ipc.WithSchema(schema))
	if err := w.Write(rec); err != nil {
		panic(err)
	}
	if err := w.Close(); err != nil {
		panic(err)
	}
	p := fuzzseeds.Plans()[5]
	p.Nodes[0].GetSource().GetArrow().Ipc = out.Bytes()
	return &jobpb.ExecuteRequest{Plan: p}
}

// bigName is a one-node datagen job whose name is n bytes.
func bigName(n int) *jobpb.ExecuteRequest {
	p := fuzzseeds.Plans()[0]
	p.Name = strings.Repeat("n", n)
	return &jobpb.ExecuteRequest{Plan: p}
}

// manyColumns is the select-filter seed plan with n columns selected.
func manyColumns(n int) *jobpb.ExecuteRequest {
	p := fuzzseeds.Plans()[1]
	sel := p.Nodes[1].GetSelect()
	sel.Columns = make([]*planpb.NamedExpr, n)
	for i := range sel.Columns {
		sel.Columns[i] = &planpb.NamedExpr{Name: "c" + strconv.Itoa(i), Expr: &planpb.Expr{Kind: &planpb.Expr_Column{Column: "id"}}}
	}
	// The filter reads id, which the select no longer outputs: keep one.
	sel.Columns[0].Name = "id"
	return &jobpb.ExecuteRequest{Plan: p}
}

// measure runs binary's server, sends copies of req at once and returns
// the first answer (a status code or the job's end), the server's VmHWM in
// KiB and how many bytes it logged.
func measure(binary string, req []byte, copies int) (string, int, int, error) {
	dir, err := os.MkdirTemp("", "requestmem")
	if err != nil {
		return "", 0, 0, err
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "s.sock")
	cmd := exec.Command(binary, "serve", "--listen", "unix://"+sock, "--log-level", "info")
	cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+dir)
	var logBytes countingWriter
	cmd.Stderr = &logBytes
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", 0, 0, err
	}
	if err := cmd.Start(); err != nil {
		return "", 0, 0, err
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}()
	if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
		return "", 0, 0, fmt.Errorf("no ready line: %w", err)
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(1<<30), grpc.MaxCallRecvMsgSize(1<<30)))
	if err != nil {
		return "", 0, 0, err
	}
	defer conn.Close()
	answers := make([]string, copies)
	var wg sync.WaitGroup
	for i := range copies {
		wg.Go(func() { answers[i] = execute(conn, req) })
	}
	wg.Wait()
	hwm, err := vmHWM(cmd.Process.Pid)
	return answers[0], hwm, int(logBytes.n.Load()), err
}

// execute sends req and returns how the server answered it; a job that
// runs is canceled after its first events.
func execute(conn *grpc.ClientConn, req []byte) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	stream, err := conn.NewStream(ctx, &jobpb.JobService_ServiceDesc.Streams[0], jobpb.JobService_Execute_FullMethodName, grpc.ForceCodec(rawCodec{}))
	if err != nil {
		return status.Code(err).String()
	}
	if err := stream.SendMsg(rawRequest(req)); err != nil && err != io.EOF {
		return "send: " + err.Error()
	}
	if err := stream.CloseSend(); err != nil {
		return "send: " + err.Error()
	}
	for {
		ev := &jobpb.JobEvent{}
		if err := stream.RecvMsg(ev); err != nil {
			msg := status.Convert(err).Message()
			if len(msg) > 60 {
				msg = msg[:60] + "..."
			}
			return fmt.Sprintf("%s %q", status.Code(err), msg)
		}
		if f := ev.GetFinished(); f != nil {
			return "job " + f.GetState().String()
		}
	}
}

// vmHWM reads a process's peak resident set in KiB.
func vmHWM(pid int) (int, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			return strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc/%d/status", pid)
}

type countingWriter struct{ n atomic.Int64 }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.n.Add(int64(len(p)))
	return len(p), nil
}

// rawCodec sends requests as the bytes given; answers are decoded as usual.
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
