package integration_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/flinkgo/flinkgo/integration/testkit"
	"github.com/flinkgo/flinkgo/internal/poll"
	"github.com/flinkgo/flinkgo/runtime/rest"
)

// A Kafka topic read by a job whose Python UDF sleeps 2 ms a row (500
// rows a second): the records written before the job starts wait in the
// topic while the UDF works through them.
const kafkaBacklogPipeline = `
import time
import flinkgo as fg
from flinkgo import udf

@udf("int64", batch_size=10)
def slow(x):
    time.sleep(0.002)
    return x

env = fg.Environment(parallelism=1, config={"python.fn-execution.bundle.size": "10"})
events = env.read_kafka(%q, bootstrap_servers=%q, schema={"id": "int64"}).uid("events")
events.rebalance().with_column("y", slow(fg.col("id"))).uid("slow").print()
plan = env.plan("kafka-backlog")
`

// The Kafka source's pendingRecords as Flink's tools read it, through
// the REST API (GET /jobs/:jid/vertices/:vid/subtasks/metrics with
// agg=sum): records written before the job starts and held back by a
// slow Python UDF are pending, exactly the records the source has not
// read yet (the topic holds no others), and none once it read them all.
func TestKafkaPendingRecordsThroughREST(t *testing.T) {
	testkit.NoLeakedWorkers(t)
	b := testkit.Kafka(t)
	topic := b.CreateTopic(t, 2)
	const n = 3000
	recs := make([]*kgo.Record, 0, n)
	for id := range n {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(id % 2),
			Value: []byte(`{"id": ` + strconv.Itoa(id) + `}`)})
	}
	b.Produce(t, recs...)
	api, _, id := servedJob(t, fmt.Sprintf(kafkaBacklogPipeline, topic, b.Addr))

	url := api.URL + "/jobs/" + id + "/vertices/" + rest.VertexID("events") +
		"/subtasks/metrics?get=pendingRecords,numRecordsIn&agg=sum"
	read := func() (pending, in float64) {
		var ms []struct {
			ID  string  `json:"id"`
			Sum float64 `json:"sum"`
		}
		getJSON(t, url, &ms)
		for _, m := range ms {
			switch m.ID {
			case "pendingRecords":
				pending = m.Sum
			case "numRecordsIn":
				in = m.Sum
			}
		}
		return pending, in
	}
	// Polls until cond holds (hang guard: two minutes, the machine may be
	// loaded), failing with the last reading.
	wait := func(what string, cond func(pending, in float64) bool) {
		t.Helper()
		var pending, in float64
		if !poll.Within(2*time.Minute, func() bool { pending, in = read(); return cond(pending, in) }) {
			t.Fatalf("waiting for %s: pendingRecords %v, numRecordsIn %v of %d", what, pending, in, n)
		}
		fmt.Printf("FIGURES Kafka source, %s: pendingRecords %v, numRecordsIn %v of %d\n", what, pending, in, n)
	}
	wait("held back by the UDF", func(pending, in float64) bool { return in > 0 && pending > 0 && pending+in == n })
	wait("caught up", func(pending, in float64) bool { return pending == 0 && in == n })
}
