package job

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/flinkgo/flinkgo/connectors/kafka"
	"github.com/flinkgo/flinkgo/integration/testkit"
	"github.com/flinkgo/flinkgo/internal/arrowipc"
	"github.com/flinkgo/flinkgo/internal/poll"
	"github.com/flinkgo/flinkgo/runtime/config"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
)

// datagenToKafka plans datagen(rows, rowsPerSecond) at parallelism p → an
// exactly-once Kafka sink (uid "kafka") at parallelism p writing {"id": n}.
func datagenToKafka(t *testing.T, rows int64, rowsPerSecond float64, p int, b *testkit.KafkaBroker, topic, prefix string, cfg map[string]string) *plan.Graph {
	t.Helper()
	schema, err := arrowipc.EncodeSchema(arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil))
	if err != nil {
		t.Fatal(err)
	}
	src := &planpb.Node{Id: 1, Uid: "numbers", Name: "datagen", OutputSchema: schema, Parallelism: int32(p),
		Kind: &planpb.Node_Source{Source: &planpb.Source{Kind: &planpb.Source_Datagen{Datagen: &planpb.DatagenSource{
			Rows: rows, RowsPerSecond: rowsPerSecond,
		}}}}}
	out := &planpb.Node{Id: 2, Uid: "kafka", Name: "write_kafka", OutputSchema: schema, Parallelism: int32(p),
		Inputs: []*planpb.Input{{Node: 1, Partitioning: &planpb.Partitioning{Kind: planpb.Partitioning_REBALANCE}}},
		Kind: &planpb.Node_Sink{Sink: &planpb.Sink{Kind: &planpb.Sink_Kafka{Kafka: &planpb.KafkaSink{
			Topic: topic, BootstrapServers: b.Addr, TransactionalIdPrefix: prefix, Delivery: planpb.KafkaSink_EXACTLY_ONCE,
		}}}}}
	g, err := plan.PlanWire(&planpb.JobPlan{Name: "to-kafka", Config: cfg, Nodes: []*planpb.Node{src, out}}, plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// stableAndEnd are topic's last stable and end offsets, by partition,
// printed for comparison.
func stableAndEnd(t *testing.T, adm *kadm.Client, topic string) (lso, end string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stable, err := adm.ListCommittedOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(stable.Offsets()), fmt.Sprint(ends.Offsets())
}

// TestKafkaSinkRestoresAtAnotherParallelismAndAbortsLingering cancels a
// job writing to Kafka exactly-once at parallelism 2 (checkpoints
// retained), leaves a transaction open under the next id of subtask 1, as
// a zombie of the failed attempt would, and restores the latest checkpoint
// at parallelism 1: the restore commits what the checkpoint precommitted,
// aborts the zombie's transaction (subtask 1 no longer exists, but its
// ids are scanned), and a read_committed reader sees every id once.
func TestKafkaSinkRestoresAtAnotherParallelismAndAbortsLingering(t *testing.T) {
	b := testkit.Kafka(t)
	topic := b.CreateTopic(t, 2)
	prefix := "restore-" + topic
	const rows = 30000
	cfg := checkpointConfig(t.TempDir(), config.ConfigCheckpointRetention, config.RetainOnCancellation)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	j, err := Start(ctx, datagenToKafka(t, rows, 10000, 2, b, topic, prefix, cfg), Options{Allocator: mem, SourceBatchRows: 500})
	if err != nil {
		t.Fatal(err)
	}
	waitForCheckpoints(t, j, 2)
	cancel()
	_, _ = j.Wait() // canceled
	latest := ""
	for _, c := range j.Checkpoints() {
		if c.Status == "completed" {
			latest = c.Path
		}
	}
	m, _, err := LoadMetadata(latest)
	if err != nil {
		t.Fatal(err)
	}
	var sub1 kafka.KafkaState
	for _, op := range m.Operators {
		for _, st := range op.Subtasks {
			if op.UID == "kafka" && st.Subtask == 1 {
				if err := json.Unmarshal(st.Sink, &sub1); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	// The zombie: rows under subtask 1's next transactional id, left open.
	zombie, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.DefaultProduceTopic(topic),
		kgo.TransactionalID(fmt.Sprintf("%s-1-%d", prefix, sub1.Counter)), kgo.TransactionTimeout(15*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if err := zombie.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := zombie.ProduceSync(context.Background(), &kgo.Record{Value: []byte(`{"id": -1}`)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	zombie.Close()
	adm := b.Admin(t)
	if lso, end := stableAndEnd(t, adm, topic); lso == end {
		t.Fatalf("the zombie's open transaction should hold the last stable offsets %s below the ends %s", lso, end)
	}

	cfg[config.ConfigRestorePath] = latest
	j2, err := Start(context.Background(), datagenToKafka(t, rows, 0, 1, b, topic, prefix, cfg), Options{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j2.Wait(); err != nil {
		t.Fatal(err)
	}
	// Nothing stays open (the commit markers can trail the job's end).
	var lso, end string
	if !poll.Within(time.Minute, func() bool { lso, end = stableAndEnd(t, adm, topic); return lso == end }) {
		t.Fatalf("the last stable offsets %s stay below the ends %s: the zombie's transaction was not aborted", lso, end)
	}
	counts := map[int64]int{}
	for _, r := range b.Records(t, topic, true) {
		var v struct{ ID int64 }
		if err := json.Unmarshal(r.Value, &v); err != nil {
			t.Fatal(err)
		}
		counts[v.ID]++
	}
	if counts[-1] != 0 {
		t.Fatal("a read_committed reader sees the zombie's row")
	}
	for id := range int64(rows) {
		if counts[id] != 1 {
			t.Fatalf("id %d seen %d times by a read_committed reader, want once (%d distinct ids)", id, counts[id], len(counts))
		}
	}
}
