package server

import (
	"context"
	"errors"
	"testing"

	"github.com/flinkgo/flinkgo/runtime/proto/jobpb"
)

func collectedEvent(node int32) *jobpb.JobEvent {
	return &jobpb.JobEvent{Kind: &jobpb.JobEvent_Collected{Collected: &jobpb.CollectedBatch{Node: node}}}
}

func TestCollectSenderKeepsTheOrderAndSendsAllBeforeClose(t *testing.T) {
	var got []int32
	s := newCollectSender(context.Background(), func(ev *jobpb.JobEvent) error {
		got = append(got, ev.GetCollected().GetNode())
		return nil
	})
	for i := range int32(50) {
		if err := s.send(collectedEvent(i)); err != nil {
			t.Fatal(err)
		}
	}
	s.close()
	if len(got) != 50 {
		t.Fatalf("%d of 50 sent at close", len(got))
	}
	for i, n := range got {
		if n != int32(i) {
			t.Fatalf("message %d was node %d: out of order", i, n)
		}
	}
	if s.failed() != nil {
		t.Error(s.failed())
	}
}

func TestCollectSenderFailsLaterSendsWithTheFirstError(t *testing.T) {
	broken := errors.New("client gone")
	sent := 0
	s := newCollectSender(context.Background(), func(*jobpb.JobEvent) error {
		sent++
		return broken
	})
	var err error
	for i := int32(0); err == nil && i < 100; i++ {
		err = s.send(collectedEvent(i))
	}
	s.close()
	if !errors.Is(err, broken) || !errors.Is(s.failed(), broken) {
		t.Errorf("send gave %v, failed() %v; want the send's error", err, s.failed())
	}
	if sent != 1 {
		t.Errorf("%d sends tried after the first failed; want none", sent-1)
	}
}

func TestCollectSenderGivesUpWhenTheJobEnds(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	release := make(chan struct{})
	s := newCollectSender(ctx, func(*jobpb.JobEvent) error { <-release; return nil })
	stop := errors.New("canceled")
	cancel(stop)
	var err error
	for i := int32(0); err == nil && i < collectAhead+2; i++ {
		err = s.send(collectedEvent(i))
	}
	if !errors.Is(err, stop) {
		t.Errorf("send with a full queue after the job ended: %v, want its cause", err)
	}
	close(release)
	s.close()
}
