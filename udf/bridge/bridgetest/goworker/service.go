package goworker

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/protobuf/proto"

	"github.com/flinkgo/flinkgo/udf/bridge/proto/workerpb"
)

// service is the UdfWorker service: the chain of Open over the batches of
// Process (python/flinkgo/worker/server.py's UdfWorkerServicer).
type service struct {
	workerpb.UnimplementedUdfWorkerServer
	dir        string
	maxMessage int
	logger     hclog.Logger
	// registered is set once go-plugin's server holds the service.
	registered atomic.Bool

	mu    sync.Mutex
	chain *chain
}

func (s *service) Open(_ context.Context, req *workerpb.OpenRequest) (*workerpb.OpenResponse, error) {
	c, err := newChain(req)
	if err != nil {
		return &workerpb.OpenResponse{Error: toUdfError(-1, err)}, nil
	}
	if c.failOpen != "" {
		return &workerpb.OpenResponse{Error: &workerpb.UdfError{
			Seq: -1, UdfName: c.failOpen, ExceptionType: ErrorType,
			Message: "told to fail in Open", Traceback: "goworker: fail_open",
		}}, nil
	}
	s.mu.Lock()
	s.chain = c
	s.mu.Unlock()
	resp := &workerpb.OpenResponse{
		Pid:            int64(os.Getpid()),
		PythonVersion:  runtime.Version(),
		PyarrowVersion: "arrow-go/v18",
	}
	socket := req.GetTransport() == workerpb.Transport_TRANSPORT_UNIX_SOCKET
	shared := req.GetTransport() == workerpb.Transport_TRANSPORT_SHARED_MEMORY
	if (socket || shared) && !c.noDataSocket {
		path := filepath.Join(s.dir, fmt.Sprintf("data-%d.sock", req.GetSubtask()))
		l, err := net.Listen("unix", path)
		if err != nil {
			return nil, fmt.Errorf("goworker: data socket: %w", err)
		}
		var layout *sharedLayout
		if shared {
			layout = &sharedLayout{slots: int(req.GetSharedSlots()), slotBytes: req.GetSharedSlotBytes(), inputSchema: req.GetInputSchema()}
		}
		go s.serveSocket(l.(*net.UnixListener), c, layout)
		resp.DataSocket = path
	}
	s.logger.Info("udf chain opened", "udfs", c.names())
	return resp, nil
}

func (s *service) Process(stream workerpb.UdfWorker_ProcessServer) error {
	s.mu.Lock()
	c := s.chain
	s.mu.Unlock()
	if c == nil {
		return stream.Send(errorResponse(-1, errors.New("Process called before Open")))
	}
	serveBatches(c, stream)
	return nil
}

func (s *service) Close(context.Context, *workerpb.CloseRequest) (*workerpb.CloseResponse, error) {
	c := s.closeChain()
	if c != nil && c.failClose != "" {
		return &workerpb.CloseResponse{Error: &workerpb.UdfError{
			Seq: -1, UdfName: c.failClose, ExceptionType: ErrorType,
			Message: "told to fail in Close", Traceback: "goworker: fail_close",
		}}, nil
	}
	return &workerpb.CloseResponse{}, nil
}

// closeChain forgets the chain and returns it, nil when there was none.
func (s *service) closeChain() *chain {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.chain
	s.chain = nil
	return c
}

// serveSocket accepts the host's one connection and serves the batch
// stream on it (python/flinkgo/worker/datasocket.py).
// With layout, it first takes the shared region (the shared-memory
// transport) and moves payloads through it.
func (s *service) serveSocket(l *net.UnixListener, c *chain, layout *sharedLayout) {
	conn, err := l.AcceptUnix()
	_ = l.Close() // also removes the socket file
	if err != nil {
		return
	}
	defer conn.Close()
	var stream batchStream = &socketStream{conn: conn, reader: bufio.NewReaderSize(conn, 64<<10), maxBytes: s.maxMessage}
	if layout != nil {
		shared, err := receiveShared(conn, *layout, stream)
		if err != nil {
			s.logger.Error("shared-memory region", "error", err)
			return
		}
		if s, ok := shared.(*sharedStream); ok {
			defer s.close()
		}
		stream = shared
	}
	serveBatches(c, stream)
}

// batchStream is the batch stream on either transport.
type batchStream interface {
	Recv() (*workerpb.ProcessRequest, error)
	Send(*workerpb.ProcessResponse) error
}

// serveBatches answers a batch stream: one result per batch, BundleDone per
// marker. After a failure it sends one error and stops, as the Python
// worker does; the host fails the task.
func serveBatches(c *chain, stream batchStream) {
	for {
		req, err := stream.Recv()
		if err != nil {
			return
		}
		switch kind := req.GetKind().(type) {
		case *workerpb.ProcessRequest_Batch:
			res, err := c.apply(kind.Batch)
			if err != nil {
				_ = stream.Send(errorResponse(kind.Batch.GetSeq(), err))
				return
			}
			if err := stream.Send(&workerpb.ProcessResponse{Kind: &workerpb.ProcessResponse_Result{Result: res}}); err != nil {
				return
			}
		case *workerpb.ProcessRequest_EndBundle:
			done := &workerpb.BundleDone{BundleId: kind.EndBundle.GetBundleId()}
			if err := stream.Send(&workerpb.ProcessResponse{Kind: &workerpb.ProcessResponse_BundleDone{BundleDone: done}}); err != nil {
				return
			}
		}
	}
}

func errorResponse(seq int64, err error) *workerpb.ProcessResponse {
	return &workerpb.ProcessResponse{Kind: &workerpb.ProcessResponse_Error{Error: toUdfError(seq, err)}}
}

// udfError is a failure of one UDF; other errors are the worker's own.
type udfError struct {
	udf string
	err error
}

func (e *udfError) Error() string { return fmt.Sprintf("udf %q: %v", e.udf, e.err) }

func toUdfError(seq int64, err error) *workerpb.UdfError {
	out := &workerpb.UdfError{Seq: seq, ExceptionType: ErrorType, Message: err.Error(), Traceback: "goworker: " + err.Error()}
	if ue, ok := errors.AsType[*udfError](err); ok {
		out.UdfName = ue.udf
		out.Message = ue.err.Error()
		out.Traceback = fmt.Sprintf("goworker: udf %q: %v", ue.udf, ue.err)
	}
	return out
}

// socketStream frames the messages with a 4-byte little-endian length, as
// the host's socket transport does.
type socketStream struct {
	conn     net.Conn
	reader   *bufio.Reader
	maxBytes int
}

func (s *socketStream) Recv() (*workerpb.ProcessRequest, error) {
	var header [4]byte
	if _, err := io.ReadFull(s.reader, header[:]); err != nil {
		return nil, err
	}
	n := binary.LittleEndian.Uint32(header[:])
	if int64(n) > int64(s.maxBytes) {
		return nil, fmt.Errorf("frame of %d bytes is over the %d-byte limit", n, s.maxBytes)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(s.reader, body); err != nil {
		return nil, err
	}
	req := &workerpb.ProcessRequest{}
	if err := proto.Unmarshal(body, req); err != nil {
		return nil, err
	}
	return req, nil
}

func (s *socketStream) Send(resp *workerpb.ProcessResponse) error {
	buf, err := proto.MarshalOptions{}.MarshalAppend([]byte{0, 0, 0, 0}, resp)
	if err != nil {
		return err
	}
	binary.LittleEndian.PutUint32(buf, uint32(len(buf)-4))
	_, err = s.conn.Write(buf)
	return err
}
