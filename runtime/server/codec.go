package server

import (
	"fmt"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	protov2 "google.golang.org/protobuf/proto"

	"github.com/flinkgo/flinkgo/runtime/proto/jobpb"
)

// Codec returns the server option of the codec that sends collected rows
// fast: gRPC's proto codec, except for a JobEvent carrying collected rows,
// which it encodes by hand: its Arrow IPC bytes are not copied into the
// message (gRPC writes them from where they are), and a padding field
// before them (CollectedBatch.padding; protobuf fields may come in any
// order) makes them start 8-aligned in the message, so that the client
// reads the batch in place. Any protobuf parser reads the same message.
func Codec() grpc.ServerOption {
	return grpc.ForceServerCodecV2(eventCodec{encoding.GetCodecV2(proto.Name)})
}

type eventCodec struct{ encoding.CodecV2 }

// inPlaceBytes is the smallest IPC stream sent without a copy: below it
// the copy costs less than a buffer of its own.
const inPlaceBytes = 64 << 10

// undecodable holds the decoding error of each request that is not valid
// protobuf (malformed bytes, a string that is not UTF-8), by the message
// it was decoded into, until the guard's interceptors take it. gRPC turns
// any error of a codec's Unmarshal into INTERNAL "error unmarshalling
// request", which says the runtime failed; the guard answers
// INVALID_ARGUMENT, which says the request did.
var undecodable sync.Map

// Unmarshal decodes a request. A request that is not valid protobuf
// leaves v empty and its error in undecodable: never an error here (see
// undecodable).
// A request over the limits of one request (scanWire) is refused the same
// way, before it is decoded.
func (c eventCodec) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(protov2.Message)
	if !ok {
		return c.CodecV2.Unmarshal(data, v)
	}
	buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
	defer buf.Free()
	if err := scanWire(buf.ReadOnlyData(), m.ProtoReflect().Descriptor()); err != nil {
		undecodable.Store(v, err)
		return nil
	}
	if err := protov2.Unmarshal(buf.ReadOnlyData(), m); err != nil {
		undecodable.Store(v, fmt.Errorf("the request is not a valid protobuf message of the job service (%d bytes): %w", data.Len(), err))
	}
	return nil
}

// takeDecodeError returns (and forgets) the decoding error of the request
// decoded into v, or nil.
func takeDecodeError(v any) error {
	if err, ok := undecodable.LoadAndDelete(v); ok {
		return err.(error)
	}
	return nil
}

func (c eventCodec) Marshal(v any) (mem.BufferSlice, error) {
	ev, ok := v.(*jobpb.JobEvent)
	batch := ev.GetCollected()
	if !ok || batch == nil || len(batch.GetArrowIpc()) < inPlaceBytes || len(batch.GetPadding()) > 0 {
		return c.CodecV2.Marshal(v)
	}
	return mem.BufferSlice{mem.SliceBuffer(collectedHeader(batch)), mem.SliceBuffer(batch.GetArrowIpc())}, nil
}

// collectedHeader is the JobEvent of batch up to its arrow_ipc bytes, with
// the padding that puts them at an offset divisible by 8.
func collectedHeader(batch *jobpb.CollectedBatch) []byte {
	ipc := len(batch.GetArrowIpc())
	for pad := 0; ; pad++ {
		var inner []byte
		if n := batch.GetNode(); n != 0 {
			inner = protowire.AppendTag(inner, 1, protowire.VarintType)
			inner = protowire.AppendVarint(inner, uint64(int64(n)))
		}
		if s := batch.GetSubtask(); s != 0 {
			inner = protowire.AppendTag(inner, 2, protowire.VarintType)
			inner = protowire.AppendVarint(inner, uint64(int64(s)))
		}
		inner = protowire.AppendTag(inner, 4, protowire.BytesType)
		inner = protowire.AppendBytes(inner, make([]byte, pad))
		inner = protowire.AppendTag(inner, 3, protowire.BytesType)
		inner = protowire.AppendVarint(inner, uint64(ipc))
		head := protowire.AppendTag(nil, 3, protowire.BytesType) // JobEvent.collected
		head = protowire.AppendVarint(head, uint64(len(inner)+ipc))
		head = append(head, inner...)
		if len(head)%8 == 0 {
			return head
		}
	}
}
