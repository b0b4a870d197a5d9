package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/flinkgo/flinkgo/integration/testkit"
	"github.com/flinkgo/flinkgo/runtime/connector"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
)

// The Kafka sink against a real broker (testkit.Kafka).

func kafkaSinkOf(b *testkit.KafkaBroker, topic string, d planpb.KafkaSink_Delivery) *planpb.KafkaSink {
	return &planpb.KafkaSink{Topic: topic, BootstrapServers: b.Addr, Delivery: d,
		TransactionalIdPrefix: "flinkgo-test-" + topic, KeyColumn: "name"}
}

// kafkaPreCommit precommits checkpoint id and decodes the state it returns.
func kafkaPreCommit(t *testing.T, w connector.Writer, id int64) KafkaState {
	t.Helper()
	data, err := w.PreCommit(id)
	if err != nil {
		t.Fatal(err)
	}
	st, err := DecodeKafkaState(data)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func idBatch(mem memory.Allocator, from, to int64) arrow.RecordBatch {
	bld := array.NewRecordBuilder(mem, schema)
	defer bld.Release()
	for i := from; i < to; i++ {
		bld.Field(0).(*array.Int64Builder).Append(i)
		bld.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("k%d", i))
	}
	return bld.NewRecordBatch()
}

func writeIDs(t *testing.T, w connector.Writer, mem memory.Allocator, from, to int64) {
	t.Helper()
	b := idBatch(mem, from, to)
	defer b.Release()
	if err := w.Write(b); err != nil {
		t.Fatal(err)
	}
}

// committedValues are the values a read_committed reader sees, sorted, once
// no transaction is open (the coordinator writes the commit markers after
// EndTxn returns).
func committedValues(t *testing.T, b *testkit.KafkaBroker, topic string) []string {
	t.Helper()
	waitStable(t, b.Admin(t), topic)
	var out []string
	for _, r := range b.Records(t, topic, true) {
		out = append(out, string(r.Value))
	}
	slices.Sort(out)
	return out
}

func jsonRows(from, to int64) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf(`{"id":%d,"name":"k%d"}`, i, i))
	}
	slices.Sort(out)
	return out
}

// crash drops a writer as a killed process would: its producers go away
// without ending their transactions.
func (w *kafkaWriter) crash() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	if w.cur != nil {
		w.cur.Close()
	}
	w.closePending()
}

func TestKafkaExactlyOnceCommitsAtCheckpointCompletion(t *testing.T) {
	b := testkit.Kafka(t)
	topic := b.CreateTopic(t, 2)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	w, err := openSink(kafkaSinkOf(b, topic, planpb.KafkaSink_EXACTLY_ONCE),
		connector.WriterConfig{Schema: schema, Parallelism: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	writeIDs(t, w, mem, 0, 10)
	st := kafkaPreCommit(t, w, 1)
	if len(st.Transactions) != 1 || st.Counter != 1 || st.Transactions[0].TransactionalID != "flinkgo-test-"+topic+"-0-0" {
		t.Fatalf("state after the first precommit: %+v", st)
	}
	// Precommitted: flushed, not visible to read_committed readers.
	if lso, end := stableAndEnd(t, b.Admin(t), topic); lso != 0 || end != 10 {
		t.Fatalf("after the precommit the last stable offsets sum to %d and the ends to %d, want 0 and 10", lso, end)
	}
	writeIDs(t, w, mem, 10, 20) // the next transaction, open while checkpoint 1 is pending
	if err := w.Commit(1); err != nil {
		t.Fatal(err)
	}
	// Records waits for the last stable offset: the open transaction holds
	// it, so only what was committed before it counts.
	if _, err := w.PreCommit(2); err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(2); err != nil {
		t.Fatal(err)
	}
	if got, want := committedValues(t, b, topic), jsonRows(0, 20); !slices.Equal(got, want) {
		t.Fatalf("read_committed sees %v, want %v", got, want)
	}
	recs := b.Records(t, topic, true)
	if string(recs[0].Key) != strings.TrimSuffix(strings.Split(string(recs[0].Value), `"name":"`)[1], `"}`) {
		t.Fatalf("record key %q does not match its value %s", recs[0].Key, recs[0].Value)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestKafkaRecoveryCommitsPrecommittedAndAbortsLingering(t *testing.T) {
	b := testkit.Kafka(t)
	topic := b.CreateTopic(t, 1)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	k := kafkaSinkOf(b, topic, planpb.KafkaSink_EXACTLY_ONCE)
	w, err := openWriter(k, connector.WriterConfig{Schema: schema, Parallelism: 1})
	if err != nil {
		t.Fatal(err)
	}
	writeIDs(t, w, mem, 0, 5)
	st1 := kafkaPreCommit(t, w, 1)
	writeIDs(t, w, mem, 5, 8)
	st2 := kafkaPreCommit(t, w, 2) // checkpoint 2 is taken but never completes
	if len(st2.Transactions) != 2 {
		t.Fatalf("checkpoint 2 holds %+v, want both uncommitted transactions", st2)
	}
	writeIDs(t, w, mem, 8, 12) // after the checkpoint: lingering once the writer dies
	w.crash()
	// The lingering transaction holds the last stable offset below the end.
	adm := b.Admin(t)
	if lso, end := stableAndEnd(t, adm, topic); lso >= end {
		t.Fatalf("last stable offset %d, end %d: the open transaction should hold it back", lso, end)
	}
	// Restore checkpoint 1 (as if checkpoint 2 failed): its transaction is
	// committed, the two later ones aborted.
	for range 2 { // recovery is idempotent: a failure during it is repaired by running it again
		if err := RecoverKafka(k, map[int]KafkaState{0: st1}, 1); err != nil {
			t.Fatal(err)
		}
	}
	waitStable(t, adm, topic) // nothing stays open
	if got, want := committedValues(t, b, topic), jsonRows(0, 5); !slices.Equal(got, want) {
		t.Fatalf("read_committed sees %v, want %v", got, want)
	}
	// A restored writer continues at the counter and commits normally.
	w2, err := openWriter(k, connector.WriterConfig{Schema: schema, Parallelism: 1, Restoring: true, Restore: []byte(fmt.Sprintf(`{"counter":%d}`, st1.Counter))})
	if err != nil {
		t.Fatal(err)
	}
	writeIDs(t, w2, mem, 5, 12)
	if err := w2.Close(); err != nil {
		t.Fatal(err)
	}
	if got, want := committedValues(t, b, topic), jsonRows(0, 12); !slices.Equal(got, want) {
		t.Fatalf("read_committed sees %v, want %v", got, want)
	}
	// Committing checkpoint 1's transaction again (a second restore of it)
	// is done already, not an error.
	if err := CommitKafka(k, st1.Transactions); err != nil {
		t.Fatal(err)
	}
}

// stableAndEnd sums the last stable offsets and the end offsets of topic's
// partitions.
func stableAndEnd(t *testing.T, adm *kadm.Client, topic string) (lso, end int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stable, err := adm.ListCommittedOffsets(ctx, topic)
	if err == nil {
		err = stable.Error()
	}
	ends, err2 := adm.ListEndOffsets(ctx, topic)
	if err2 == nil {
		err2 = ends.Error()
	}
	if err := errors.Join(err, err2); err != nil {
		t.Fatal(err)
	}
	stable.Each(func(o kadm.ListedOffset) { lso += o.Offset })
	ends.Each(func(o kadm.ListedOffset) { end += o.Offset })
	return lso, end
}

// waitStable waits until no transaction holds topic's last stable offsets
// below its end offsets.
func waitStable(t *testing.T, adm *kadm.Client, topic string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		lso, end := stableAndEnd(t, adm, topic)
		if lso == end {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the last stable offsets of %q sum to %d, below the end %d, after a minute: a transaction stays open", topic, lso, end)
		}
		time.Sleep(20 * time.Millisecond) // polling the broker for a condition
	}
}

func TestKafkaSinkErrorsAreNamed(t *testing.T) {
	for _, c := range []struct {
		name string
		k    *planpb.KafkaSink
		want string
	}{
		{"no prefix", &planpb.KafkaSink{Topic: "t", BootstrapServers: "127.0.0.1:1"}, "needs a transactional_id_prefix"},
		{"bad delivery", &planpb.KafkaSink{Topic: "t", BootstrapServers: "127.0.0.1:1", Delivery: 9}, "delivery 9 is not"},
		{"no servers", &planpb.KafkaSink{Topic: "t", Delivery: planpb.KafkaSink_NONE}, "bootstrap_servers"},
		{"property", &planpb.KafkaSink{Topic: "t", BootstrapServers: "h:1", Delivery: planpb.KafkaSink_NONE,
			Properties: map[string]string{"transactional.id": "x"}}, `"transactional.id" is not supported (use transactional_id_prefix=`},
		{"raw of two columns", &planpb.KafkaSink{Topic: "t", BootstrapServers: "h:1", Delivery: planpb.KafkaSink_NONE,
			ValueFormat: planpb.KafkaSource_RAW}, "raw writes one column"},
		{"key not a column", &planpb.KafkaSink{Topic: "t", BootstrapServers: "h:1", Delivery: planpb.KafkaSink_NONE,
			KeyColumn: "k"}, `key column "k" is not a column`},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := validateSink(c.k, schema)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("validateSink: %v, want an error containing %q", err, c.want)
			}
		})
	}
}

func TestKafkaUnreachableBrokerNamesTheSinkAndAddress(t *testing.T) {
	addr := "127.0.0.1:1" // nothing listens on port 1
	k := &planpb.KafkaSink{Topic: "out", BootstrapServers: addr, Delivery: planpb.KafkaSink_AT_LEAST_ONCE}
	_, err := openSink(k, connector.WriterConfig{Schema: schema, Parallelism: 1})
	if err == nil || !strings.Contains(err.Error(), `write_kafka to "out"`) || !strings.Contains(err.Error(), "cannot reach the Kafka brokers at "+addr) {
		t.Fatalf("Open: %v, want an error naming the sink and %s", err, addr)
	}
	k.Delivery, k.TransactionalIdPrefix = planpb.KafkaSink_EXACTLY_ONCE, "p"
	if err := RecoverKafka(k, nil, 1); err == nil || !strings.Contains(err.Error(), "cannot reach the Kafka brokers at "+addr) {
		t.Fatalf("RecoverKafka: %v, want an error naming %s", err, addr)
	}
}

func TestKafkaEncodesCSVAndRaw(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	b := batch(mem) // ids 1, 2, null; names a, quo"te, c
	defer b.Release()
	csvEnc, err := newKafkaEncoder(&planpb.KafkaSink{ValueFormat: planpb.KafkaSource_CSV, KeyColumn: "id"}, schema)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csvEnc.encode(b)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range recs {
		got = append(got, fmt.Sprintf("%s|%s", r.Key, r.Value))
	}
	if want := []string{`1|1,a`, `2|2,"quo""te"`, `|,c`}; !slices.Equal(got, want) {
		t.Fatalf("csv records %q, want %q", got, want)
	}
	rawEnc, err := newKafkaEncoder(&planpb.KafkaSink{ValueFormat: planpb.KafkaSource_RAW, KeyColumn: "id"}, schema)
	if err != nil {
		t.Fatal(err)
	}
	if recs, err = rawEnc.encode(b); err != nil {
		t.Fatal(err)
	}
	if string(recs[1].Value) != `quo"te` || recs[2].Key != nil {
		t.Fatalf("raw records %+v", recs)
	}
	jsonEnc, _ := newKafkaEncoder(&planpb.KafkaSink{}, schema)
	if recs, err = jsonEnc.encode(b); err != nil {
		t.Fatal(err)
	}
	if string(recs[1].Value) != `{"id":2,"name":"quo\"te"}` || string(recs[2].Value) != `{"id":null,"name":"c"}` {
		t.Fatalf("json values %s, %s", recs[1].Value, recs[2].Value)
	}
}
