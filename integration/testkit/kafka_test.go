package testkit

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestMain(m *testing.M) { KafkaMain(m) }

// The package's broker takes records and gives them back, partition by
// partition; a second call finds the same broker.
func TestKafkaBrokerProducesAndReads(t *testing.T) {
	b := Kafka(t)
	if Kafka(t) != b {
		t.Fatal("a second Kafka call started another broker")
	}
	topic := b.CreateTopic(t, 3)
	var recs []*kgo.Record
	for i := 0; i < 30; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i % 3), Value: []byte(strconv.Itoa(i))})
	}
	b.Produce(t, recs...)
	got := b.Records(t, topic, false)
	if len(got) != 30 {
		t.Fatalf("read %d records, want 30", len(got))
	}
	seen := map[string]int32{}
	for _, r := range got {
		seen[string(r.Value)] = r.Partition
	}
	for i := 0; i < 30; i++ {
		if p, ok := seen[strconv.Itoa(i)]; !ok || p != int32(i%3) {
			t.Errorf("record %d: partition %d (found %v), want %d", i, p, ok, i%3)
		}
	}
	b.AddPartitions(t, topic, 5)
	parts, err := b.Admin(t).ListEndOffsets(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(parts[topic]); n != 5 {
		t.Fatalf("topic has %d partitions after AddPartitions(5)", n)
	}
}

// Records with readCommitted sees a committed transaction's records and
// not an aborted one's: what the exactly-once sink tests rely on.
func TestKafkaBrokerReadCommitted(t *testing.T) {
	b := Kafka(t)
	topic := b.CreateTopic(t, 2)
	cl := b.Client(t, kgo.TransactionalID("testkit-"+topic), kgo.DefaultProduceTopic(topic))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i, commit := range []kgo.TransactionEndTry{kgo.TryCommit, kgo.TryAbort, kgo.TryCommit} {
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for p := int32(0); p < 2; p++ {
			r := &kgo.Record{Partition: p, Value: []byte("txn" + strconv.Itoa(i))}
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		if err := cl.EndTransaction(ctx, commit); err != nil {
			t.Fatal(err)
		}
	}
	committed := map[string]int{}
	for _, r := range b.Records(t, topic, true) {
		committed[string(r.Value)]++
	}
	if committed["txn0"] != 2 || committed["txn1"] != 0 || committed["txn2"] != 2 || len(committed) != 2 {
		t.Fatalf("read_committed saw %v, want txn0 and txn2 twice each", committed)
	}
	if all := b.Records(t, topic, false); len(all) != 6 {
		t.Fatalf("read_uncommitted saw %d records, want 6", len(all))
	}
}
