package goworker

import (
	"bytes"
	"errors"
	"fmt"
	"net"

	"golang.org/x/sys/unix"

	"github.com/flinkgo/flinkgo/udf/bridge/proto/workerpb"
)

// sharedLayout is the shared region's layout of the OpenRequest.
type sharedLayout struct {
	slots     int
	slotBytes int64
	// inputSchema is the Open's input schema stream (schema, then the
	// 8-byte end of stream): a batch sent without its schema follows it.
	inputSchema []byte
}

// sharedStream is the shared-memory transport over a socket stream
// (python/flinkgo/worker/sharedmem.py): it reads each batch out of its
// input slot and writes each result into the output slot of its batch.
// Unlike the Python worker it copies the input: it is a test worker.
type sharedStream struct {
	sharedLayout
	inner batchStream
	mem   []byte
	// slots of the batches awaiting their result, in order.
	pending []int32
}

// receiveShared takes the region's descriptor (one byte with SCM_RIGHTS)
// and maps it; a byte alone (the host made no region) leaves inner as it is.
func receiveShared(conn *net.UnixConn, layout sharedLayout, inner batchStream) (batchStream, error) {
	buf, oob := make([]byte, 1), make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := conn.ReadMsgUnix(buf, oob)
	if err != nil {
		return nil, err
	}
	if n == 1 && oobn == 0 {
		return inner, nil
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || n != 1 || len(msgs) != 1 {
		return nil, errors.New("the host did not send the region first")
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		return nil, errors.New("the host did not send the region's descriptor")
	}
	defer unix.Close(fds[0])
	mem, err := unix.Mmap(fds[0], 0, int(2*int64(layout.slots)*layout.slotBytes), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, err
	}
	return &sharedStream{sharedLayout: layout, inner: inner, mem: mem}, nil
}

func (s *sharedStream) Recv() (*workerpb.ProcessRequest, error) {
	req, err := s.inner.Recv()
	if err != nil {
		return nil, err
	}
	if b := req.GetBatch(); b != nil {
		if b.GetSlot() < 0 || int(b.GetSlot()) >= s.slots || b.GetSharedLength() > s.slotBytes {
			return nil, fmt.Errorf("batch %d: slot %d with %d bytes is outside the region", b.GetSeq(), b.GetSlot(), b.GetSharedLength())
		}
		s.pending = append(s.pending, b.GetSlot())
		if n := b.GetSharedLength(); n > 0 {
			start := int64(b.GetSlot()) * s.slotBytes
			b.ArrowIpc = bytes.Clone(s.mem[start : start+n])
			if b.GetSchemaOmitted() && len(s.inputSchema) >= 8 {
				// schema + the batch message + end of stream
				schema := s.inputSchema[:len(s.inputSchema)-8]
				b.ArrowIpc = append(append(bytes.Clone(schema), b.ArrowIpc...), s.inputSchema[len(s.inputSchema)-8:]...)
			}
		}
	}
	return req, nil
}

func (s *sharedStream) Send(resp *workerpb.ProcessResponse) error {
	if res := resp.GetResult(); res != nil && len(s.pending) > 0 {
		slot := s.pending[0]
		s.pending = s.pending[1:]
		if int64(len(res.GetArrowIpc())) <= s.slotBytes {
			start := int64(s.slots+int(slot)) * s.slotBytes
			res.SharedLength = int64(copy(s.mem[start:start+s.slotBytes], res.GetArrowIpc()))
			res.ArrowIpc = nil
		}
	}
	return s.inner.Send(resp)
}

func (s *sharedStream) close() { _ = unix.Munmap(s.mem) }
