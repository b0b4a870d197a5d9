// Package files is the connector of files: kind "file", a source reading
// CSV, JSON lines and Parquet files (one split per file, the file at index
// i going to subtask i mod p, its position a split state) and a part-file
// sink writing them exactly-once by two-phase commit, as Flink's FileSink:
// parts precommitted at a checkpoint's barrier, published when it
// completes, recovered before a restored attempt writes; a mode at
// submission ("error", "overwrite", "append") and, with changelog, an
// upsert stream written with a row_kind column. Package runtime/source has
// the readers, runtime/sink the writer, its state and its recovery.
package files

import (
	"errors"
	"fmt"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flinkgo/flinkgo/internal/beneath"
	"github.com/flinkgo/flinkgo/runtime/connector"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
	"github.com/flinkgo/flinkgo/runtime/rowkind"
	"github.com/flinkgo/flinkgo/runtime/sink"
	"github.com/flinkgo/flinkgo/runtime/source"
)

// Source is the connector of file sources.
func Source() connector.SourceConnector {
	return connector.SourceConnector{Kind: "file", Decode: decodeSource}
}

// Sink is the connector of part-file sinks.
func Sink() connector.SinkConnector {
	return connector.SinkConnector{Kind: "file", Decode: decodeSink}
}

func decodeSource(wire *planpb.Source) (connector.Source, error) {
	f := wire.GetFile()
	if f == nil {
		return nil, errors.New("files: the source is not a file source")
	}
	return fileSource{f}, nil
}

type fileSource struct{ wire *planpb.FileSource }

// CheckSchema accepts any schema: each reader checks its file's columns
// against it when it opens the file.
func (fileSource) CheckSchema(*arrow.Schema) error { return nil }

func (fileSource) Boundedness() connector.Boundedness { return connector.Boundedness{Bounded: true} }

func (s fileSource) Open(cfg connector.ReaderConfig) (connector.Reader, error) {
	return source.OpenFiles(s.wire, cfg)
}

func decodeSink(wire *planpb.Sink) (connector.Sink, error) {
	f := wire.GetFile()
	if f == nil {
		return nil, errors.New("files: the sink is not a file sink")
	}
	return fileSink{f}, nil
}

type fileSink struct{ wire *planpb.FileSink }

func (fileSink) CheckSchema(*arrow.Schema) error { return nil }

// Changelog: a file cannot take rows back, but a changelog file sink
// writes an upsert stream with each row's kind.
func (s fileSink) Changelog() connector.Changelog {
	return connector.Changelog{Upsert: s.wire.GetChangelog()}
}

// CheckChangelog refuses a retract stream (as Flink's filesystem sink),
// and an upsert stream unless the sink writes changelogs.
func (s fileSink) CheckChangelog(in connector.ChangelogInput) error {
	switch {
	case in.Mode == rowkind.Retract && s.wire.GetChangelog():
		return fmt.Errorf("file sink %s cannot write the retract stream made by %s as an upsert changelog: %s",
			in.Sink, in.From, in.NotUpsertable())
	case in.Mode == rowkind.Retract:
		return fmt.Errorf("file sink %s cannot write the retract stream made by %s: it takes rows back (-U/+U pairs, -D) and files cannot; "+
			"write it with changelog=True after the aggregation, with at most selects that keep its group keys between (an upsert stream with a row_kind column), "+
			"collect()/print() it, or aggregate with emit=\"final\" over a bounded input",
			in.Sink, in.From)
	case !s.wire.GetChangelog():
		return fmt.Errorf("file sink %s reads the %s stream made by %s, which updates rows (+U) and deletes them (-D): "+
			"write it with changelog=True (an explicit row_kind column), or aggregate with emit=\"final\" over a bounded input",
			in.Sink, in.Described, in.From)
	}
	return nil
}

func (fileSink) CommitsAtCheckpoints() bool { return true }

// HoldsOutputUntilEnd: in mode "overwrite" or "append" the parts stay
// hidden until the job's output is committed, so that a failed run adds
// nothing visible to the directory.
func (s fileSink) HoldsOutputUntilEnd() bool { return s.wire.GetMode() != planpb.FileSink_ERROR }

func (s fileSink) Open(cfg connector.WriterConfig) (connector.Writer, error) {
	return sink.OpenFile(s.wire, cfg)
}

// Prepare applies the sink's mode to its directory (sink.Prepare).
func (s fileSink) Prepare(restoring bool, paths beneath.Paths) (connector.Prepared, error) {
	p, err := sink.PrepareBeneath(paths, s.wire, restoring)
	if err != nil || p == nil {
		return nil, err
	}
	return previous{p}, nil
}

// previous deletes what mode "overwrite" replaces once the output is
// committed.
type previous struct{ p *sink.Previous }

func (p previous) OutputCommitted() error { return p.p.Delete() }

// Recover publishes the parts pending in the restored states and deletes
// what a failed attempt wrote after them. A restart without a snapshot
// deletes everything hidden the failed attempt wrote; the first attempt
// of a fresh job touches nothing.
func (s fileSink) Recover(rc connector.RecoverContext) error {
	if !rc.Restoring && !rc.Restarting {
		return nil
	}
	subtasks := make([]int, 0, len(rc.States))
	for i := range rc.States {
		subtasks = append(subtasks, i)
	}
	sort.Ints(subtasks)
	var states [][]byte
	for _, i := range subtasks {
		states = append(states, rc.States[i])
	}
	return s.recover(states, rc.Paths)
}

// CommitFinal publishes the last parts the subtasks kept for the job's
// end.
func (s fileSink) CommitFinal(states [][]byte, paths beneath.Paths) error {
	return s.recover(states, paths)
}

func (s fileSink) recover(raw [][]byte, paths beneath.Paths) error {
	states := make([]sink.SinkState, 0, len(raw))
	for _, b := range raw {
		st, err := sink.DecodeState(b)
		if err != nil {
			return err
		}
		states = append(states, st)
	}
	return sink.RecoverBeneath(paths, s.wire, states)
}
