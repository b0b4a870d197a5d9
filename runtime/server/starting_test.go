package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/flinkgo/flinkgo/runtime/job"
)

// A client has a job's id as soon as the job is submitted, before
// job.Start returned: a savepoint asked for then waits for the start
// instead of answering that no such job runs (a test did exactly that on a
// loaded machine, and a user's script would too).
func TestSavepointWaitsForAStartingJob(t *testing.T) {
	s := New(job.Options{}, nil)
	starting := &runningJob{name: "j", started: time.Now(), ready: make(chan struct{})}
	s.mu.jobs["starting"] = starting

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := s.job(ctx, "starting"); status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("while the job starts: %v, want the caller's deadline, not NOT_FOUND", err)
	}

	close(starting.ready) // Start failed: no job
	_, err := s.job(context.Background(), "starting")
	if status.Code(err) != codes.NotFound || !strings.Contains(err.Error(), "failed to start") {
		t.Fatalf("after a failed start: %v", err)
	}
	if _, err := s.job(context.Background(), "unknown"); status.Code(err) != codes.NotFound {
		t.Fatalf("unknown id: %v", err)
	}
}
