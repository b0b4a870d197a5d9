// Package print is the connector of print sinks: kind "print". Each row is
// printed as Flink's PrintSink does ("+I[a, 1]", prefixed "<subtask+1>> "
// when several subtasks print) on the runtime's stdout at Write:
// at-least-once across restarts, no state.
package print

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flinkgo/flinkgo/runtime/connector"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
	"github.com/flinkgo/flinkgo/runtime/rowkind"
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

// Open returns the writer of one print subtask.
func (printer) Open(cfg connector.WriterConfig) (connector.Writer, error) {
	if cfg.Schema == nil {
		return nil, errors.New("print: the writer's schema is nil")
	}
	out := cfg.Stdout
	if out == nil {
		out = os.Stdout
	}
	return &printWriter{out: out, prefix: printPrefix(cfg)}, nil
}

// printPrefix is Flink's: "<subtask+1>> " when several subtasks print.
func printPrefix(cfg connector.WriterConfig) string {
	if cfg.Parallelism > 1 {
		return fmt.Sprintf("%d> ", cfg.Subtask+1)
	}
	return ""
}

// printWriter is at-least-once: rows are printed at Write.
type printWriter struct {
	out    io.Writer
	prefix string
}

// Write prints each row as Flink's PrintSink: its kind, then its values,
// e.g. "+I[a, 1]", "-U[a, 1]", "+U[a, 2]" (the row-kind column is not a
// value).
func (w *printWriter) Write(b arrow.RecordBatch) error {
	var sb strings.Builder
	kinds := rowkind.KindsOf(b)
	values := int(b.NumCols())
	if kinds != nil {
		values--
	}
	for r := range int(b.NumRows()) {
		sb.WriteString(w.prefix)
		sb.WriteString(rowkind.At(kinds, r).String())
		sb.WriteString("[")
		for c := range values {
			if c > 0 {
				sb.WriteString(", ")
			}
			sb.WriteString(b.Column(c).ValueStr(r))
		}
		sb.WriteString("]\n")
	}
	// One Write per batch: print subtasks share Stdout.
	_, err := io.WriteString(w.out, sb.String())
	return err
}

func (w *printWriter) PreCommit(int64) ([]byte, error) { return nil, nil }
func (w *printWriter) Commit(int64) error              { return nil }
func (w *printWriter) Close() error                    { return nil }
func (w *printWriter) Abort()                          {}

var _ connector.Writer = (*printWriter)(nil)
