package job

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/flinkgo/flinkgo/integration/testkit"
	"github.com/flinkgo/flinkgo/internal/arrowipc"
	"github.com/flinkgo/flinkgo/runtime/config"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
)

// The Kafka source against a real broker (testkit.Kafka): records are JSON
// objects {"id": n}; the output has the id and the partition and offset
// columns, so a test checks every record once and in partition order.

var kafkaSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "partition", Type: arrow.PrimitiveTypes.Int32},
	{Name: "offset", Type: arrow.PrimitiveTypes.Int64},
}, nil)

func kafkaSourceNode(t *testing.T, b *testkit.KafkaBroker, topic string, p int, bounded bool, props map[string]string) *planpb.Node {
	t.Helper()
	schema, err := arrowipc.EncodeSchema(kafkaSchema)
	if err != nil {
		t.Fatal(err)
	}
	return &planpb.Node{Id: 1, Uid: "events", Name: "read_kafka", OutputSchema: schema, Parallelism: int32(p),
		Kind: &planpb.Node_Source{Source: &planpb.Source{Kind: &planpb.Source_Kafka{Kafka: &planpb.KafkaSource{
			Topics: []string{topic}, BootstrapServers: b.Addr, GroupId: "flinkgo-" + topic,
			BoundedLatest: bounded, ValueFormat: planpb.KafkaSource_JSON,
			PartitionColumn: "partition", OffsetColumn: "offset", Properties: props,
		}}}}}
}

// kafkaToCollect plans read_kafka at parallelism p → collect.
func kafkaToCollect(t *testing.T, src *planpb.Node, cfg map[string]string) *plan.Graph {
	t.Helper()
	sink := &planpb.Node{Id: 2, Uid: "out", Name: "collect", OutputSchema: src.OutputSchema, Parallelism: 1,
		Inputs: []*planpb.Input{{Node: 1, Partitioning: &planpb.Partitioning{Kind: planpb.Partitioning_REBALANCE}}},
		Kind:   &planpb.Node_Sink{Sink: &planpb.Sink{Kind: &planpb.Sink_Collect{Collect: &planpb.CollectSink{}}}}}
	g, err := plan.PlanWire(&planpb.JobPlan{Name: "kafka", Config: cfg, Nodes: []*planpb.Node{src, sink}}, plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// kafkaToCSV plans read_kafka → CSV part files in out (two-phase commit).
func kafkaToCSV(t *testing.T, src *planpb.Node, out string, cfg map[string]string) *plan.Graph {
	t.Helper()
	sink := &planpb.Node{Id: 2, Uid: "files", Name: "write_csv", OutputSchema: src.OutputSchema, Parallelism: 2,
		Inputs: []*planpb.Input{{Node: 1, Partitioning: &planpb.Partitioning{Kind: planpb.Partitioning_REBALANCE}}},
		Kind: &planpb.Node_Sink{Sink: &planpb.Sink{Kind: &planpb.Sink_File{File: &planpb.FileSink{
			Format: planpb.FileSource_CSV, Path: out,
		}}}}}
	g, err := plan.PlanWire(&planpb.JobPlan{Name: "kafka", Config: cfg, Nodes: []*planpb.Node{src, sink}}, plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// produceIDs writes ids [from, to) as {"id": n}, id n to partition n mod
// partitions.
func produceIDs(t *testing.T, b *testkit.KafkaBroker, topic string, from, to int64, partitions int) {
	t.Helper()
	recs := make([]*kgo.Record, 0, to-from)
	for id := from; id < to; id++ {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(id % int64(partitions)),
			Key: []byte(strconv.FormatInt(id, 10)), Value: []byte(`{"id": ` + strconv.FormatInt(id, 10) + `}`)})
	}
	b.Produce(t, recs...)
}

// collected gathers collected rows: ids, and per partition the offsets in
// the order they came.
type collected struct {
	mu      sync.Mutex
	ids     map[int64]int
	offsets map[int32][]int64
	changed chan struct{}
}

func newCollected() *collected {
	return &collected{ids: map[int64]int{}, offsets: map[int32][]int64{}, changed: make(chan struct{}, 1)}
}

func (c *collected) collect(_ *plan.Operator, _ int, b arrow.RecordBatch) error {
	defer b.Release()
	ids := b.Column(0).(*array.Int64)
	parts := b.Column(1).(*array.Int32)
	offs := b.Column(2).(*array.Int64)
	c.mu.Lock()
	for i := range int(b.NumRows()) {
		c.ids[ids.Value(i)]++
		c.offsets[parts.Value(i)] = append(c.offsets[parts.Value(i)], offs.Value(i))
	}
	c.mu.Unlock()
	select {
	case c.changed <- struct{}{}:
	default:
	}
	return nil
}

// check fails unless ids 0..n-1 came once each and every partition's
// offsets came in increasing order (of one topic).
func (c *collected) check(t *testing.T, n int64) {
	t.Helper()
	c.checkIDs(t, n)
	c.mu.Lock()
	defer c.mu.Unlock()
	for p, offs := range c.offsets {
		for i := 1; i < len(offs); i++ {
			if offs[i] <= offs[i-1] {
				t.Fatalf("partition %d: offset %d came after %d", p, offs[i], offs[i-1])
			}
		}
	}
}

// checkIDs fails unless ids 0..n-1 came once each, and no other.
func (c *collected) checkIDs(t *testing.T, n int64) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	for id := range n {
		if got := c.ids[id]; got != 1 {
			t.Fatalf("id %d came %d times, want once (%d distinct ids of %d)", id, got, len(c.ids), n)
		}
	}
	if int64(len(c.ids)) != n {
		t.Fatalf("%d distinct ids came, want %d", len(c.ids), n)
	}
}

// waitFor waits until cond holds on the collected rows (hang guard: a
// minute), failing with what came.
func (c *collected) waitFor(t *testing.T, what string, cond func(ids map[int64]int) bool) {
	t.Helper()
	deadline := time.After(time.Minute)
	for {
		c.mu.Lock()
		ok := cond(c.ids)
		n := len(c.ids)
		c.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-c.changed:
		case <-deadline:
			t.Fatalf("waiting for %s: %d distinct ids came", what, n)
		}
	}
}

// A 4-partition topic read to its end (bounded) at parallelism 1, 2 and 4:
// every record once, each partition in order. Records produced once the
// job runs are after the latest offsets of its start and are not read.
func TestKafkaSourceReadsEveryRecordOnceAtEachParallelism(t *testing.T) {
	b := testkit.Kafka(t)
	for _, p := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("parallelism %d", p), func(t *testing.T) {
			topic := b.CreateTopic(t, 4)
			const n = 4000
			produceIDs(t, b, topic, 0, n, 4)
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			got := newCollected()
			var late sync.Once
			j, err := Start(context.Background(), kafkaToCollect(t, kafkaSourceNode(t, b, topic, p, true, nil), nil), Options{
				Allocator: mem, SourceBatchRows: 300,
				Collect: func(op *plan.Operator, sub int, batch arrow.RecordBatch) error {
					// The sources run: records written now are past their stop offsets.
					late.Do(func() { produceIDs(t, b, topic, n, n+400, 4) })
					return got.collect(op, sub, batch)
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := j.Wait(); err != nil {
				t.Fatal(err)
			}
			got.check(t, n)
		})
	}
}

// An unbounded read at parallelism 2 stopped with a savepoint, more records
// written, and the job restored at parallelism 4 (then 1) reading to the
// end: the published rows of both runs are every record exactly once.
func TestKafkaSourceRestoresAtAnotherParallelism(t *testing.T) {
	b := testkit.Kafka(t)
	for _, tc := range []struct{ from, to int }{{2, 4}, {4, 1}} {
		t.Run(fmt.Sprintf("%d to %d", tc.from, tc.to), func(t *testing.T) {
			topic := b.CreateTopic(t, 4)
			dir, out, savepoints := t.TempDir(), t.TempDir(), t.TempDir()
			const n = 6000
			produceIDs(t, b, topic, 0, n, 4)
			cfg := checkpointConfig(dir, config.ConfigSavepointDir, savepoints)
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			j, err := Start(context.Background(), kafkaToCSV(t, kafkaSourceNode(t, b, topic, tc.from, false, nil), out, cfg),
				Options{Allocator: mem, SourceBatchRows: 200})
			if err != nil {
				t.Fatal(err)
			}
			waitForCheckpoints(t, j, 2)
			sp, err := j.StopWithSavepoint(context.Background(), "")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := j.Wait(); err != nil {
				t.Fatal(err)
			}
			produceIDs(t, b, topic, n, 2*n, 4)
			cfg[config.ConfigRestorePath] = sp
			j2, err := Start(context.Background(), kafkaToCSV(t, kafkaSourceNode(t, b, topic, tc.to, true, nil), out, cfg),
				Options{Allocator: mem, SourceBatchRows: 200})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := j2.Wait(); err != nil {
				t.Fatal(err)
			}
			wantExactly(t, committedIDs(t, out), 2*n)
		})
	}
}

// Partitions added to the topic while the job runs are discovered
// (partition.discovery.interval.ms) and read from their start.
func TestKafkaSourceDiscoversNewPartitions(t *testing.T) {
	b := testkit.Kafka(t)
	topic := b.CreateTopic(t, 2)
	produceIDs(t, b, topic, 0, 200, 2)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	got := newCollected()
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	src := kafkaSourceNode(t, b, topic, 2, false, map[string]string{"partition.discovery.interval.ms": "100"})
	j, err := Start(ctx, kafkaToCollect(t, src, nil), Options{Allocator: mem, Collect: got.collect})
	if err != nil {
		t.Fatal(err)
	}
	got.waitFor(t, "the first 200 ids", func(ids map[int64]int) bool { return len(ids) >= 200 })
	b.AddPartitions(t, topic, 5)
	// ids 200..499 over partitions 0..4: partitions 2, 3 and 4 are new.
	produceIDs(t, b, topic, 200, 500, 5)
	got.waitFor(t, "ids of the new partitions", func(ids map[int64]int) bool { return len(ids) >= 500 })
	cancel(errors.New("test ends the job"))
	if _, err := j.Wait(); err == nil {
		t.Fatal("canceled job returned no error")
	}
	got.check(t, 500)
	got.mu.Lock()
	defer got.mu.Unlock()
	for p := int32(2); p < 5; p++ {
		if len(got.offsets[p]) != 60 {
			t.Errorf("new partition %d: %d records read, want 60", p, len(got.offsets[p]))
		}
	}
}

// A topic pattern reads every matching topic, and topics created while the
// job runs once discovered; topics that do not match are left alone.
func TestKafkaSourcePatternFindsNewTopics(t *testing.T) {
	b := testkit.Kafka(t)
	prefix := b.CreateTopic(t, 1) // a unique name; the pattern's topics extend it
	first, later, other := prefix+"-a", prefix+"-b", prefix+"x"
	b.CreateNamedTopic(t, first, 2)
	b.CreateNamedTopic(t, other, 1)
	produceIDs(t, b, first, 0, 100, 2)
	produceIDs(t, b, other, 1000, 1010, 1)
	src := kafkaSourceNode(t, b, "", 2, false, map[string]string{"partition.discovery.interval.ms": "100"})
	k := src.GetSource().GetKafka()
	k.Topics, k.TopicPattern = nil, regexp.QuoteMeta(prefix)+"-[a-z]"
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	got := newCollected()
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	j, err := Start(ctx, kafkaToCollect(t, src, nil), Options{Allocator: mem, Collect: got.collect})
	if err != nil {
		t.Fatal(err)
	}
	got.waitFor(t, "the first topic's ids", func(ids map[int64]int) bool { return len(ids) >= 100 })
	b.CreateNamedTopic(t, later, 3)
	produceIDs(t, b, later, 100, 250, 3)
	got.waitFor(t, "the new topic's ids", func(ids map[int64]int) bool { return len(ids) >= 250 })
	cancel(errors.New("test ends the job"))
	if _, err := j.Wait(); err == nil {
		t.Fatal("canceled job returned no error")
	}
	got.checkIDs(t, 250) // and none of the topic that does not match (ids 1000..1009)
}
