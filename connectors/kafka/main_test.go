package kafka

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/integration/testkit"
	"github.com/flinkgo/flinkgo/runtime/connector"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
)

// TestMain stops the Kafka broker of sink_test.go, if one started, and
// checks for leaks.
func TestMain(m *testing.M) { testkit.KafkaMain(m) }

var schema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

func batch(mem memory.Allocator) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2, 0}, []bool{true, true, false})
	b.Field(1).(*array.StringBuilder).AppendValues([]string{"a", `quo"te`, "c"}, nil)
	return b.NewRecordBatch()
}

// openSink opens a Kafka writer through the connector, as the runtime does.
func openSink(k *planpb.KafkaSink, cfg connector.WriterConfig) (connector.Writer, error) {
	snk, err := Sink().Decode(&planpb.Sink{Kind: &planpb.Sink_Kafka{Kafka: k}})
	if err != nil {
		return nil, err
	}
	return snk.Open(cfg)
}
