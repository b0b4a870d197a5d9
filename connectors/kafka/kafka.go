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
// as Flink's non-upsert Kafka sink. source.go has the reader, sink.go the
// writer, txn.go the transactions and their recovery.
package kafka

import (
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flinkgo/flinkgo/internal/beneath"
	"github.com/flinkgo/flinkgo/runtime/connector"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
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
	return sourceConfig{k}, nil
}

type sourceConfig struct{ wire *planpb.KafkaSource }

// CheckSchema checks the options and the columns before the source
// connects.
func (s sourceConfig) CheckSchema(schema *arrow.Schema) error {
	return validateSource(s.wire, schema)
}

func (s sourceConfig) Boundedness() connector.Boundedness {
	return connector.Boundedness{Bounded: s.wire.GetBoundedLatest(), WhyEndless: `read_kafka without bounded="latest"`}
}

func (s sourceConfig) Open(cfg connector.ReaderConfig) (connector.Reader, error) {
	cfg = cfg.WithDefaults()
	if err := source.CheckConfig(cfg); err != nil {
		return nil, err
	}
	restore, err := source.RestoreMap(cfg.Restore)
	if err != nil {
		return nil, err
	}
	return openReader(s.wire, cfg, restore)
}

func decodeSink(wire *planpb.Sink) (connector.Sink, error) {
	k := wire.GetKafka()
	if k == nil {
		return nil, errors.New("kafka: the sink is not a Kafka sink")
	}
	return sinkConfig{k}, nil
}

type sinkConfig struct{ wire *planpb.KafkaSink }

// CheckSchema checks the options and the columns before the sink
// connects.
func (s sinkConfig) CheckSchema(in *arrow.Schema) error { return validateSink(s.wire, in) }

// Changelog: Kafka records cannot be taken back.
func (sinkConfig) Changelog() connector.Changelog { return connector.Changelog{} }

func (sinkConfig) CheckChangelog(in connector.ChangelogInput) error {
	// As Flink's (non-upsert) Kafka sink.
	//lint:ignore ST1005 the message starts with the connector's name, a proper noun
	return fmt.Errorf("Kafka sink %s cannot write the %s stream made by %s: it takes rows back (-U, -D) and Kafka records cannot be; "+
		"write an append-only stream (aggregate with emit=\"final\" over a bounded input, or an inner join of append-only inputs), or collect()/print() it",
		in.Sink, in.Mode, in.From)
}

// CommitsAtCheckpoints: an exactly-once sink (the default) is
// transactional; at-least-once and "none" keep no state and end by Close,
// which waits for their last records.
func (s sinkConfig) CommitsAtCheckpoints() bool {
	d := s.wire.GetDelivery()
	return d == planpb.KafkaSink_EXACTLY_ONCE || d == planpb.KafkaSink_DELIVERY_UNSPECIFIED
}

func (sinkConfig) HoldsOutputUntilEnd() bool { return false }

func (s sinkConfig) Open(cfg connector.WriterConfig) (connector.Writer, error) {
	if err := checkWriterConfig(cfg); err != nil {
		return nil, err
	}
	return openWriter(s.wire, cfg)
}

func (sinkConfig) Prepare(bool, beneath.Paths) (connector.Prepared, error) { return nil, nil }

// Recover commits the transactions the restored states precommitted and
// aborts those earlier attempts left open, on every start (a fresh job
// too, as Flink: a crashed run with the same prefix may have left some).
func (s sinkConfig) Recover(rc connector.RecoverContext) error {
	states := make(map[int]KafkaState, len(rc.States))
	for i, b := range rc.States {
		st, err := DecodeKafkaState(b)
		if err != nil {
			return err
		}
		states[i] = st
	}
	return RecoverKafka(s.wire, states, rc.Parallelism)
}

// CommitFinal commits the last transactions the subtasks precommitted.
func (s sinkConfig) CommitFinal(raw [][]byte, _ beneath.Paths) error {
	var txns []KafkaTransaction
	for _, b := range raw {
		st, err := DecodeKafkaState(b)
		if err != nil {
			return err
		}
		txns = append(txns, st.Transactions...)
	}
	return CommitKafka(s.wire, txns)
}

// checkWriterConfig checks what a writer needs of its config; a restored
// state's problems are openWriter's.
func checkWriterConfig(cfg connector.WriterConfig) error {
	var errs []error
	if cfg.Schema == nil {
		errs = append(errs, errors.New("schema is nil"))
	}
	if cfg.Subtask < 0 {
		errs = append(errs, fmt.Errorf("subtask %d is below 0", cfg.Subtask))
	}
	if cfg.Restoring {
		if _, err := DecodeKafkaState(cfg.Restore); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("sink: invalid config: %w", errors.Join(errs...))
	}
	return nil
}
