package job

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/connectors/nexmark"
	"github.com/flinkgo/flinkgo/integration/testkit"
	"github.com/flinkgo/flinkgo/internal/arrowipc"
	"github.com/flinkgo/flinkgo/internal/poll"
	"github.com/flinkgo/flinkgo/runtime/metrics"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
)

// sourceMetrics sums a source vertex's pendingRecords and numRecordsIn
// over its subtasks, as the REST API's ?agg=sum reads them.
func sourceMetrics(t *testing.T, j *Job, uid string) (pending, in float64) {
	t.Helper()
	for _, v := range j.Vertices() {
		if v.Head.UID != uid {
			continue
		}
		for _, task := range v.Tasks {
			m := task.Read().Values(metrics.Rates{})
			pending += m["pendingRecords"]
			in += m["numRecordsIn"]
		}
		return pending, in
	}
	t.Fatalf("no vertex %q", uid)
	return 0, 0
}

// waitUntil polls cond until it holds (hang guard: a minute), failing with
// what it last returned.
func waitUntil(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	var last string
	if !poll.Within(time.Minute, func() (ok bool) { ok, last = cond(); return ok }) {
		t.Fatalf("waiting for %s: %s", what, last)
	}
}

// The Kafka source's pendingRecords is its consumer lag, as Flink's
// KafkaSource reports it: records written before the job starts, read
// by a source that a waiting sink holds back, are pending until read; the
// metric is exactly the records not read yet (the topic has no others),
// and 0 once every record is read.
func TestKafkaSourcePendingRecordsIsItsLag(t *testing.T) {
	b := testkit.Kafka(t)
	topic := b.CreateTopic(t, 2)
	const n = 6000
	produceIDs(t, b, topic, 0, n, 2)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	got := newCollected()
	release := make(chan struct{})
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	j, err := Start(ctx, kafkaToCollect(t, kafkaSourceNode(t, b, topic, 1, false, nil), nil), Options{
		Allocator: mem, SourceBatchRows: 50,
		Collect: func(op *plan.Operator, sub int, batch arrow.RecordBatch) error {
			select {
			case <-release:
			case <-ctx.Done():
				batch.Release()
				return context.Cause(ctx)
			}
			return got.collect(op, sub, batch)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		// A failed wait ends the job before the allocator is checked.
		cancel(errors.New("test ends the job"))
		_, _ = j.Wait()
	}()
	// Held back: the source stops once the inboxes are full, far from
	// the end of the 6000 records.
	waitUntil(t, "the held-back source's lag", func() (bool, string) {
		pending, in := sourceMetrics(t, j, "events")
		return pending > 0 && pending+in == n, fmtPending(pending, in)
	})
	close(release)
	got.waitFor(t, "every record", func(ids map[int64]int) bool { return len(ids) >= n })
	waitUntil(t, "no lag once every record is read", func() (bool, string) {
		pending, in := sourceMetrics(t, j, "events")
		return pending == 0 && in == n, fmtPending(pending, in)
	})
	cancel(errors.New("test ends the job"))
	if _, err := j.Wait(); err == nil {
		t.Fatal("canceled job returned no error")
	}
	got.check(t, n)
}

func fmtPending(pending, in float64) string {
	return fmt.Sprintf("pendingRecords %v, numRecordsIn %v", pending, in)
}

// The Nexmark source's pendingRecords are the bids behind its event
// rate: held back by a waiting sink it falls behind (never by more bids
// than it has left), and once every event is read it has none pending.
func TestNexmarkSourcePendingRecordsAreBidsBehindSchedule(t *testing.T) {
	bidSchema := nexmark.Schema(planpb.NexmarkSource_BID)
	schema, err := arrowipc.EncodeSchema(bidSchema)
	if err != nil {
		t.Fatal(err)
	}
	const events, bids = 6000, 6000 * 46 / 50
	src := &planpb.Node{Id: 1, Uid: "bids", Name: "nexmark", OutputSchema: schema, Parallelism: 1,
		Kind: &planpb.Node_Source{Source: &planpb.Source{Kind: &planpb.Source_Nexmark{Nexmark: &planpb.NexmarkSource{
			Kind: planpb.NexmarkSource_BID, Events: events, Seed: 1, EventsPerSecond: 2000,
		}}}}}
	sink := &planpb.Node{Id: 2, Uid: "out", Name: "collect", OutputSchema: schema, Parallelism: 1,
		Inputs: []*planpb.Input{{Node: 1, Partitioning: &planpb.Partitioning{Kind: planpb.Partitioning_REBALANCE}}},
		Kind:   &planpb.Node_Sink{Sink: &planpb.Sink{Kind: &planpb.Sink_Collect{Collect: &planpb.CollectSink{}}}}}
	g, err := plan.PlanWire(&planpb.JobPlan{Name: "nexmark", Nodes: []*planpb.Node{src, sink}}, plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	release := make(chan struct{})
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	var collected atomic.Int64
	j, err := Start(ctx, g, Options{Allocator: mem, Collect: func(_ *plan.Operator, _ int, batch arrow.RecordBatch) error {
		defer batch.Release()
		select {
		case <-release:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
		collected.Add(batch.NumRows())
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		cancel(errors.New("test ends the job"))
		_, _ = j.Wait()
	}()
	waitUntil(t, "the held-back source's bids behind schedule", func() (bool, string) {
		pending, in := sourceMetrics(t, j, "bids")
		if pending+in > bids {
			t.Fatalf("pendingRecords %v with %v bids read: more than the %d bids there are", pending, in, bids)
		}
		return pending > 0, fmtPending(pending, in)
	})
	close(release)
	if _, err := j.Wait(); err != nil {
		t.Fatal(err)
	}
	if pending, in := sourceMetrics(t, j, "bids"); pending != 0 || in != bids || collected.Load() != bids {
		t.Fatalf("after the end: %s, %d bids collected; want none pending and %d read", fmtPending(pending, in), collected.Load(), bids)
	}
}
