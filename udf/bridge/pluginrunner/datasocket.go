package pluginrunner

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/flinkgo/flinkgo/udf/bridge/proto/workerpb"
)

// Transport says how batches travel between host and worker.
type Transport int

const (
	// TransportDefault is TransportSharedMemory where it works (Linux),
	// else TransportUnixSocket.
	TransportDefault Transport = iota
	// TransportUnixSocket frames the Process messages on a Unix socket the
	// worker opens: about 15 µs a round trip, against about 0.4 ms for
	// grpcio's streaming on the same 2-core machine.
	TransportUnixSocket
	// TransportGRPCStream uses the Process RPC.
	TransportGRPCStream
	// TransportSharedMemory frames the messages on the Unix socket of
	// TransportUnixSocket, but batches and results travel through a memfd
	// both sides map (Linux only): the host writes a batch's Arrow IPC into
	// it, the worker reads it without a copy and writes its result back the
	// same way; only slot numbers and lengths travel on the socket.
	TransportSharedMemory
)

// ParseTransport reads a transport's name as String spells it.
func ParseTransport(name string) (Transport, error) {
	for _, t := range []Transport{TransportUnixSocket, TransportGRPCStream, TransportSharedMemory} {
		if name == t.String() {
			return t, nil
		}
	}
	return 0, fmt.Errorf("unknown UDF batch transport %q; want unix-socket, shared-memory or grpc-stream", name)
}

func (t Transport) String() string {
	switch t {
	case TransportDefault:
		return "default"
	case TransportUnixSocket:
		return "unix-socket"
	case TransportGRPCStream:
		return "grpc-stream"
	case TransportSharedMemory:
		return "shared-memory"
	}
	return fmt.Sprintf("Transport(%d)", int(t))
}

// batchStream is the batch stream whatever its transport; the generated
// Process client satisfies it.
type batchStream interface {
	Send(*workerpb.ProcessRequest) error
	Recv() (*workerpb.ProcessResponse, error)
	CloseSend() error
}

var _ batchStream = (workerpb.UdfWorker_ProcessClient)(nil)
var _ batchStream = (*socketStream)(nil)

// socketStream frames ProcessRequest and ProcessResponse messages with a
// 4-byte little-endian length on a Unix socket. Send and Recv may run on
// different goroutines; Send is not called concurrently with itself.
type socketStream struct {
	conn     *net.UnixConn
	reader   *bufio.Reader
	maxBytes int
	sendBuf  []byte
	// recvBuf is reused by Recv (one receiver goroutine): Unmarshal copies
	// what it keeps.
	recvBuf []byte
	// closeOnce ends the stream for both directions (abort).
	closeOnce sync.Once
}

func dialSocketStream(ctx context.Context, path string, maxBytes int) (*socketStream, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, err
	}
	return &socketStream{conn: c.(*net.UnixConn), reader: bufio.NewReaderSize(c, 64<<10), maxBytes: maxBytes}, nil
}

func (s *socketStream) Send(m *workerpb.ProcessRequest) error {
	buf := append(s.sendBuf[:0], 0, 0, 0, 0)
	buf, err := proto.MarshalOptions{}.MarshalAppend(buf, m)
	if err != nil {
		return err
	}
	binary.LittleEndian.PutUint32(buf, uint32(len(buf)-4))
	s.sendBuf = buf
	_, err = s.conn.Write(buf)
	return err
}

func (s *socketStream) Recv() (*workerpb.ProcessResponse, error) {
	var header [4]byte
	if _, err := io.ReadFull(s.reader, header[:]); err != nil {
		return nil, err
	}
	n := binary.LittleEndian.Uint32(header[:])
	if int64(n) > int64(s.maxBytes) {
		return nil, fmt.Errorf("worker sent a frame of %d bytes, over the %d-byte limit", n, s.maxBytes)
	}
	if cap(s.recvBuf) < int(n) {
		s.recvBuf = make([]byte, n)
	}
	body := s.recvBuf[:n]
	if _, err := io.ReadFull(s.reader, body); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	m := &workerpb.ProcessResponse{}
	if err := proto.Unmarshal(body, m); err != nil {
		return nil, fmt.Errorf("worker sent an invalid frame: %w", err)
	}
	return m, nil
}

// CloseSend half-closes: the worker answers what it has, then ends.
func (s *socketStream) CloseSend() error { return s.conn.CloseWrite() }

// abort closes the socket; a blocked Recv returns at once.
func (s *socketStream) abort() {
	s.closeOnce.Do(func() { _ = s.conn.Close() })
}
