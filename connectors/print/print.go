// Package print is the connector of print sinks: kind "print". Each row is
// printed as Flink's PrintSink does ("+I[a, 1]", prefixed "<subtask+1>> "
// when several subtasks print) on the runtime's stdout at Write:
// at-least-once across restarts, no state.
package print

import (
	"errors"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flinkgo/flinkgo/runtime/connector"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
	"github.com/flinkgo/flinkgo/runtime/sink"
)

// Sink is the connector of print sinks.
func Sink() connector.SinkConnector {
	return connector.SinkConnector{Kind: "print", Decode: decode}
}

func decode(wire *planpb.Sink) (connector.Sink, error) {
	if wire.GetPrint() == nil {
		return nil, errors.New("print: the sink is not a print sink")
	}
	return printer{}, nil
}

type printer struct{ connector.NoJobSteps }

func (printer) CheckSchema(*arrow.Schema) error { return nil }

// Changelog: a printed row shows its kind, so every stream prints.
func (printer) Changelog() connector.Changelog {
	return connector.Changelog{Upsert: true, Retract: true}
}

func (printer) CheckChangelog(connector.ChangelogInput) error { return nil }

func (printer) Open(cfg connector.WriterConfig) (connector.Writer, error) { return sink.OpenPrint(cfg) }
