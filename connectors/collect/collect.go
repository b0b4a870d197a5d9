// Package collect is the connector of collect sinks (to_pandas, collect):
// kind "collect". Batches go to the runtime's Collect function (the
// client), as they arrive or joined to about CollectBatchBytes:
// at-least-once across restarts, no state.
package collect

import (
	"errors"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flinkgo/flinkgo/runtime/connector"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
)

// Sink is the connector of collect sinks.
func Sink() connector.SinkConnector {
	return connector.SinkConnector{Kind: "collect", Decode: decode}
}

func decode(wire *planpb.Sink) (connector.Sink, error) {
	if wire.GetCollect() == nil {
		return nil, errors.New("collect: the sink is not a collect sink")
	}
	return collector{}, nil
}

type collector struct{ connector.NoJobSteps }

func (collector) CheckSchema(*arrow.Schema) error { return nil }

// Changelog: collected rows keep their row-kind column, so every stream
// is collected.
func (collector) Changelog() connector.Changelog {
	return connector.Changelog{Upsert: true, Retract: true}
}

func (collector) CheckChangelog(connector.ChangelogInput) error { return nil }

// Open returns the writer of one collect subtask.
func (collector) Open(cfg connector.WriterConfig) (connector.Writer, error) {
	if cfg.Schema == nil {
		return nil, errors.New("collect: the writer's schema is nil")
	}
	if cfg.Collect == nil {
		return nil, errors.New("collect: a collect sink without a Collect function")
	}
	return newCollectWriter(cfg), nil
}
