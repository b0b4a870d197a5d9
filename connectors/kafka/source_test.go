package kafka

import (
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/flinkgo/flinkgo/runtime/connector"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
)

// The Kafka source's parts that need no broker: ownership, options and
// decoding. runtime/job/kafka_test.go and python/tests/test_kafka_source.py
// run it against a real one.

func TestJavaStringHashMatchesJava(t *testing.T) {
	// Values of Java's String.hashCode.
	for s, want := range map[string]int32{
		"":             0,
		"a":            97,
		"hello":        99162322,
		"events":       -1291329255,
		"orders-2024":  -1815790872,
		"\U0001F600ok": 1703759487, // a surrogate pair, then ASCII
	} {
		if got := javaStringHash(s); got != want {
			t.Errorf("javaStringHash(%q) = %d, want %d", s, got, want)
		}
	}
}

// Each partition has exactly one owner, and a topic's partitions go
// round-robin from the subtask its name picks, as Flink's enumerator.
func TestKafkaOwnerIsRoundRobinFromTheTopicsStart(t *testing.T) {
	for _, p := range []int{1, 2, 3, 4, 7} {
		start := kafkaOwner("events", 0, p)
		for part := int32(0); part < 20; part++ {
			got := kafkaOwner("events", part, p)
			if got < 0 || got >= p {
				t.Fatalf("p=%d partition %d: owner %d out of range", p, part, got)
			}
			if want := (start + int(part)) % p; got != want {
				t.Fatalf("p=%d partition %d: owner %d, want %d", p, part, got, want)
			}
		}
	}
}

func TestKafkaOptionsAreCheckedWithReasons(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	for _, tc := range []struct {
		name string
		src  *planpb.KafkaSource
		want string
	}{
		{"no topic", &planpb.KafkaSource{BootstrapServers: "h:1"}, "no topic and no topic pattern"},
		{"both", &planpb.KafkaSource{BootstrapServers: "h:1", Topics: []string{"a"}, TopicPattern: "a.*"}, "both topics and a topic pattern"},
		{"bad pattern", &planpb.KafkaSource{BootstrapServers: "h:1", TopicPattern: "a("}, "topic pattern"},
		{"no servers", &planpb.KafkaSource{Topics: []string{"a"}}, "bootstrap_servers"},
		{"unknown property", &planpb.KafkaSource{BootstrapServers: "h:1", Topics: []string{"a"},
			Properties: map[string]string{"group.id": "g"}}, `"group.id" is not supported (use group_id=)`},
		{"bad isolation", &planpb.KafkaSource{BootstrapServers: "h:1", Topics: []string{"a"},
			Properties: map[string]string{"isolation.level": "dirty"}}, "read_committed or read_uncommitted"},
		{"bad number", &planpb.KafkaSource{BootstrapServers: "h:1", Topics: []string{"a"},
			Properties: map[string]string{"fetch.max.bytes": "lots"}}, "want an integer"},
		{"metadata column missing", &planpb.KafkaSource{BootstrapServers: "h:1", Topics: []string{"a"}, KeyColumn: "k"},
			`metadata column "k" is not in the source's schema`},
		{"metadata column type", &planpb.KafkaSource{BootstrapServers: "h:1", Topics: []string{"a"}, KeyColumn: "id"},
			`column "id" is int64; a Kafka record's metadata column of its kind is binary`},
		{"raw with two columns", &planpb.KafkaSource{BootstrapServers: "h:1", Topics: []string{"a"}, ValueFormat: planpb.KafkaSource_RAW},
			"exactly one value column, binary or string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := validateSource(tc.src, schema)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
	ok := &planpb.KafkaSource{BootstrapServers: "h:1, h:2", Topics: []string{"a"}, Properties: map[string]string{
		"isolation.level": "read_committed", "partition.discovery.interval.ms": "-1", "fetch.max.wait.ms": "100",
		"commit.offsets.on.checkpoint": "false", "client.id": "me",
	}}
	if err := validateSource(ok, schema); err != nil {
		t.Fatal(err)
	}
	set, _ := parseSource(ok)
	if !set.readCommitted || set.discovery != 0 || set.commit {
		t.Fatalf("settings %+v: want read_committed, no discovery, no commit", set)
	}
	if set, _ := parseSource(&planpb.KafkaSource{BootstrapServers: "h:1", Topics: []string{"a"}, GroupId: "g"}); set.discovery != defaultDiscoveryInterval || !set.commit {
		t.Fatalf("defaults %+v: want discovery every %v and commits", set, defaultDiscoveryInterval)
	}
}

func kafkaRecords(values ...string) []*kgo.Record {
	recs := make([]*kgo.Record, len(values))
	for i, v := range values {
		recs[i] = &kgo.Record{Topic: "t", Partition: 3, Offset: int64(10 + i), Key: []byte{byte('a' + i)},
			Value: []byte(v), Timestamp: time.UnixMilli(int64(1000 * i))}
	}
	return recs
}

// Values decode into columns, metadata columns where the schema puts them.
func TestKafkaDecodeFormatsAndMetadata(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	out := arrow.NewSchema([]arrow.Field{
		{Name: "off", Type: arrow.PrimitiveTypes.Int64},
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "k", Type: arrow.BinaryTypes.Binary, Nullable: true},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}},
		{Name: "p", Type: arrow.PrimitiveTypes.Int32},
		{Name: "topic", Type: arrow.BinaryTypes.String},
	}, nil)
	src := &planpb.KafkaSource{KeyColumn: "k", TimestampColumn: "ts", PartitionColumn: "p", OffsetColumn: "off", TopicColumn: "topic"}
	for format, values := range map[planpb.KafkaSource_Format][]string{
		planpb.KafkaSource_JSON: {`{"id": 1, "name": "x", "extra": true}`, `{"name": "y"}`},
		planpb.KafkaSource_CSV:  {"1,x", ",y\r\n"},
	} {
		t.Run(format.String(), func(t *testing.T) {
			src.ValueFormat = format
			cols, err := newKafkaColumns(src, out)
			if err != nil {
				t.Fatal(err)
			}
			b, err := cols.decode(kafkaRecords(values...), mem)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Release()
			if !b.Schema().Equal(out) || b.NumRows() != 2 {
				t.Fatalf("batch %v", b)
			}
			id := b.Column(1).(*array.Int64)
			if id.Value(0) != 1 || !id.IsNull(1) || b.Column(2).(*array.String).Value(1) != "y" {
				t.Fatalf("values %v %v", b.Column(1), b.Column(2))
			}
			if b.Column(0).(*array.Int64).Value(1) != 11 || string(b.Column(3).(*array.Binary).Value(1)) != "b" ||
				b.Column(4).(*array.Timestamp).Value(1) != 1000 || b.Column(5).(*array.Int32).Value(0) != 3 ||
				b.Column(6).(*array.String).Value(0) != "t" {
				t.Fatalf("metadata columns wrong: %v", b)
			}
		})
	}
}

func TestKafkaDecodeNamesTheRecordThatFails(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	out := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	for _, tc := range []struct {
		format planpb.KafkaSource_Format
		values []string
		want   string
	}{
		{planpb.KafkaSource_JSON, []string{`{"id": 1}`, `{"id": "two"}`}, "offset 11: the value does not decode"},
		{planpb.KafkaSource_JSON, []string{`{"id": 1}`, `{"id": 2} {"id": 3}`}, "offset 11: the value does not decode: the value holds 2 rows"},
		{planpb.KafkaSource_CSV, []string{"1", "x"}, "offset 11"},
	} {
		cols, err := newKafkaColumns(&planpb.KafkaSource{ValueFormat: tc.format}, out)
		if err != nil {
			t.Fatal(err)
		}
		b, err := cols.decode(kafkaRecords(tc.values...), mem)
		if err == nil {
			b.Release()
			t.Fatalf("%s %q decoded", tc.format, tc.values)
		}
		if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), `topic "t" partition 3`) {
			t.Errorf("%s %q: error %v, want %q", tc.format, tc.values, err, tc.want)
		}
	}
	// raw into a string column: the value must be UTF-8.
	strOut := arrow.NewSchema([]arrow.Field{{Name: "line", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	cols, err := newKafkaColumns(&planpb.KafkaSource{ValueFormat: planpb.KafkaSource_RAW}, strOut)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cols.decode(kafkaRecords("ok", "\xff"), mem); err == nil || !strings.Contains(err.Error(), "not UTF-8") {
		t.Fatalf("error %v, want not UTF-8", err)
	}
}

// A restored split resumes at its offset; a bounded one keeps its stop and
// is done once there; offsets that are not positions are connector.ErrBadOffset.
func TestKafkaSplitRestore(t *testing.T) {
	s := &kafkaSplit{id: "t-0", next: -1, stop: -1}
	if err := s.restore(connector.SplitState{Split: "t-0", Offset: []byte(`{"next": 5, "stop": 5}`)}); err != nil || !s.done || s.next != 5 {
		t.Fatalf("restore: %v, split %+v", err, s)
	}
	s = &kafkaSplit{id: "t-0", next: -1, stop: -1}
	if err := s.restore(connector.SplitState{Split: "t-0", Offset: []byte(`{"next": 7}`)}); err != nil || s.done || s.next != 7 || s.stop != -1 {
		t.Fatalf("restore: %v, split %+v", err, s)
	}
	for _, bad := range []string{`{"next": -1}`, `{"next": 9, "stop": 3}`, `{"row": 1}`} {
		s := &kafkaSplit{id: "t-0", next: -1, stop: -1}
		if err := s.restore(connector.SplitState{Split: "t-0", Offset: []byte(bad)}); err == nil || !strings.Contains(err.Error(), connector.ErrBadOffset.Error()) {
			t.Errorf("offset %s: error %v, want connector.ErrBadOffset", bad, err)
		}
	}
}
