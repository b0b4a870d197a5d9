package server

import (
	"context"
	"sync"

	"github.com/flinkgo/flinkgo/runtime/proto/jobpb"
)

// collectSender sends collected rows from a goroutine of its own, a few
// messages behind the sinks: a sink goes on with its next rows while the
// client reads the last ones, instead of waiting for every message to
// cross gRPC's flow-control window. Messages keep their order.
type collectSender struct {
	queue chan *jobpb.JobEvent
	done  chan struct{}
	ctx   context.Context

	mu  sync.Mutex
	err error // the first send's error: every later message fails with it
}

// collectAhead is how many messages of collected rows wait to be sent:
// with CollectBatchBytes, the memory they hold.
const collectAhead = 2

func newCollectSender(ctx context.Context, send func(*jobpb.JobEvent) error) *collectSender {
	s := &collectSender{queue: make(chan *jobpb.JobEvent, collectAhead), done: make(chan struct{}), ctx: ctx}
	go func() {
		defer close(s.done)
		for ev := range s.queue {
			if s.failed() != nil {
				continue // drop: the job fails with the error
			}
			if err := send(ev); err != nil {
				s.mu.Lock()
				s.err = err
				s.mu.Unlock()
			}
		}
	}()
	return s
}

func (s *collectSender) failed() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// send queues ev, or returns the error of an earlier send, or the job's
// end.
func (s *collectSender) send(ev *jobpb.JobEvent) error {
	if err := s.failed(); err != nil {
		return err
	}
	select {
	case s.queue <- ev:
		return nil
	case <-s.ctx.Done():
		return context.Cause(s.ctx)
	}
}

// close waits until every queued message was sent (or dropped after an
// error). Call once, after the last send.
func (s *collectSender) close() {
	close(s.queue)
	<-s.done
}
