package server

import (
	"bytes"
	"testing"

	"google.golang.org/grpc/encoding"
	grpcproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/protobuf/proto"

	"github.com/flinkgo/flinkgo/runtime/proto/jobpb"
)

func TestCodecSendsCollectedRowsAlignedAndAsProtobuf(t *testing.T) {
	codec := eventCodec{encoding.GetCodecV2(grpcproto.Name)}
	for _, size := range []int{inPlaceBytes, inPlaceBytes + 1, 1<<21 - 7, 1<<21 + 3} {
		for _, node := range []int32{0, 1, 300, -2} {
			for _, subtask := range []int32{0, 5, 1 << 20} {
				ipc := bytes.Repeat([]byte{7}, size)
				ipc[0], ipc[size-1] = 1, 2
				ev := &jobpb.JobEvent{Kind: &jobpb.JobEvent_Collected{Collected: &jobpb.CollectedBatch{Node: node, Subtask: subtask, ArrowIpc: ipc}}}
				out, err := codec.Marshal(ev)
				if err != nil {
					t.Fatal(err)
				}
				wire := out.Materialize()
				at := len(wire) - size
				if at%8 != 0 || !bytes.Equal(wire[at:], ipc) {
					t.Fatalf("size %d node %d subtask %d: the IPC bytes start at %d, not 8-aligned at the end", size, node, subtask, at)
				}
				var got jobpb.JobEvent
				if err := proto.Unmarshal(wire, &got); err != nil {
					t.Fatalf("size %d node %d subtask %d: not protobuf: %v", size, node, subtask, err)
				}
				c := got.GetCollected()
				if c.GetNode() != node || c.GetSubtask() != subtask || !bytes.Equal(c.GetArrowIpc(), ipc) || bytes.ContainsFunc(c.GetPadding(), func(r rune) bool { return r != 0 }) {
					t.Fatalf("size %d node %d subtask %d: read back node %d subtask %d, %d IPC bytes", size, node, subtask, c.GetNode(), c.GetSubtask(), len(c.GetArrowIpc()))
				}
			}
		}
	}
}

func TestCodecLeavesOtherMessagesToProto(t *testing.T) {
	codec := eventCodec{encoding.GetCodecV2(grpcproto.Name)}
	for _, m := range []proto.Message{
		&jobpb.JobEvent{Kind: &jobpb.JobEvent_Collected{Collected: &jobpb.CollectedBatch{Node: 3, ArrowIpc: []byte("small")}}},
		&jobpb.JobEvent{Kind: &jobpb.JobEvent_Started{Started: &jobpb.JobStarted{JobId: "j"}}},
		&jobpb.CancelResponse{Found: true},
	} {
		out, err := codec.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		want, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out.Materialize(), want) {
			t.Errorf("%T: the codec's bytes differ from proto.Marshal's", m)
		}
	}
}
