// Package kafka is the connector of Kafka topics on franz-go: kind
// "kafka". The source reads one split per partition, owned as Flink's
// KafkaSource assigns them, its position {next, stop} a split state;
// bounded="latest" stops at the end offsets of its start, and its
// consumer lag is its pending records. The sink writes records by its
// delivery: "exactly-once" in one transaction per subtask and checkpoint
// (precommitted at the barrier, committed when the checkpoint completes,
// the transactions in the checkpoint's state; recovery commits those and
// aborts the lingering ones of failed attempts), "at-least-once" flushed
// at every barrier, "none". A Kafka sink takes append-only streams only,
// as Flink's non-upsert Kafka sink. Packages runtime/source and
// runtime/sink have the reader, the writer and the transactions.
package kafka

import (
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flinkgo/flinkgo/internal/beneath"
	"github.com/flinkgo/flinkgo/runtime/connector"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
	"github.com/flinkgo/flinkgo/runtime/sink"
	"github.com/flinkgo/flinkgo/runtime/source"
)

// Source is the connector of Kafka sources.
func Source() connector.SourceConnector {
	return connector.SourceConnector{Kind: "kafka", Decode: decodeSource}
}

// Sink is the connector of Kafka sinks.
func Sink() connector.SinkConnector {
	return connector.SinkConnector{Kind: "kafka", Decode: decodeSink}
}

func decodeSource(wire *planpb.Source) (connector.Source, error) {
	k := wire.GetKafka()
	if k == nil {
		return nil, errors.New("kafka: the source is not a Kafka source")
	}
	return kafkaSource{k}, nil
}

type kafkaSource struct{ wire *planpb.KafkaSource }

// CheckSchema checks the options and the columns before the source
// connects.
func (s kafkaSource) CheckSchema(schema *arrow.Schema) error {
	return source.ValidateKafka(s.wire, schema)
}

func (s kafkaSource) Boundedness() connector.Boundedness {
	return connector.Boundedness{Bounded: s.wire.GetBoundedLatest(), WhyEndless: `read_kafka without bounded="latest"`}
}

func (s kafkaSource) Open(cfg connector.ReaderConfig) (connector.Reader, error) {
	return source.OpenKafka(s.wire, cfg)
}

func decodeSink(wire *planpb.Sink) (connector.Sink, error) {
	k := wire.GetKafka()
	if k == nil {
		return nil, errors.New("kafka: the sink is not a Kafka sink")
	}
	return kafkaSink{k}, nil
}

type kafkaSink struct{ wire *planpb.KafkaSink }

// CheckSchema checks the options and the columns before the sink
// connects.
func (s kafkaSink) CheckSchema(in *arrow.Schema) error { return sink.ValidateKafka(s.wire, in) }

// Changelog: Kafka records cannot be taken back.
func (kafkaSink) Changelog() connector.Changelog { return connector.Changelog{} }

func (kafkaSink) CheckChangelog(in connector.ChangelogInput) error {
	// As Flink's (non-upsert) Kafka sink.
	return fmt.Errorf("Kafka sink %s cannot write the %s stream made by %s: it takes rows back (-U, -D) and Kafka records cannot be; "+
		"write an append-only stream (aggregate with emit=\"final\" over a bounded input, or an inner join of append-only inputs), or collect()/print() it",
		in.Sink, in.Mode, in.From)
}

// CommitsAtCheckpoints: an exactly-once sink (the default) is
// transactional; at-least-once and "none" keep no state and end by Close,
// which waits for their last records.
func (s kafkaSink) CommitsAtCheckpoints() bool {
	d := s.wire.GetDelivery()
	return d == planpb.KafkaSink_EXACTLY_ONCE || d == planpb.KafkaSink_DELIVERY_UNSPECIFIED
}

func (kafkaSink) HoldsOutputUntilEnd() bool { return false }

func (s kafkaSink) Open(cfg connector.WriterConfig) (connector.Writer, error) {
	return sink.OpenKafka(s.wire, cfg)
}

func (kafkaSink) Prepare(bool, beneath.Paths) (connector.Prepared, error) { return nil, nil }

// Recover commits the transactions the restored states precommitted and
// aborts those earlier attempts left open, on every start (a fresh job
// too, as Flink: a crashed run with the same prefix may have left some).
func (s kafkaSink) Recover(rc connector.RecoverContext) error {
	states := make(map[int]sink.KafkaState, len(rc.States))
	for i, b := range rc.States {
		st, err := sink.DecodeKafkaState(b)
		if err != nil {
			return err
		}
		states[i] = st
	}
	return sink.RecoverKafka(s.wire, states, rc.Parallelism)
}

// CommitFinal commits the last transactions the subtasks precommitted.
func (s kafkaSink) CommitFinal(raw [][]byte, _ beneath.Paths) error {
	var txns []sink.KafkaTransaction
	for _, b := range raw {
		st, err := sink.DecodeKafkaState(b)
		if err != nil {
			return err
		}
		txns = append(txns, st.Transactions...)
	}
	return sink.CommitKafka(s.wire, txns)
}
