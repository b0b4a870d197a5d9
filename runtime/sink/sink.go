// Package sink writes a plan's sink batches: printed rows, part files (CSV,
// JSON lines, Parquet) and batches collected for the client.
//
// # File sinks: exactly-once by two-phase commit, as Flink's FileSink
//
// A file sink subtask writes its rows into part files under the sink's
// directory. Every part is a whole file of its format (CSV with its header,
// Parquet with its footer), readable on its own. A part has three names in
// its life:
//
//	.part-<id>-<subtask>-<n>.<ext>.inprogress   being written
//	.part-<id>-<subtask>-<n>.<ext>.pending      finished and fsynced, owned by a checkpoint
//	part-<id>-<subtask>-<n>.<ext>               published
//
// <id> is Config.AttemptID, or a random id drawn by each writer when it is
// empty; <subtask> is the index of the subtask that wrote the part and <n>
// the subtask's part counter, carried in SinkState. Hidden names start with
// "." so readers globbing part-* see published files only. A writer never
// opens a part whose name exists in any of the three forms (it skips to the
// next counter), so names do not collide across subtasks, attempts and
// parallelisms, even if an attempt id is reused.
//
// The task drives the protocol (see Writer):
//   - PreCommit(n), when barrier n passes the sink: the in-progress part is
//     finished, fsynced and renamed to its pending name; the SinkState
//     returned (every pending part not committed yet, and the counter) goes
//     into checkpoint n. The next row opens a new part.
//   - Commit(n), when checkpoint n completed: the pending parts of
//     checkpoints <= n are renamed to their final names and the directory
//     fsynced.
//   - Close, at the end of input: the current part and every pending part
//     are published.
//   - Abort, on cancel or failure: the in-progress part is removed; pending
//     parts stay, since a checkpoint that may be restored owns them.
//
// Recovery: before any subtask of the restored job writes, the caller runs
// Recover once per file sink with the SinkStates of every old subtask. The
// restored checkpoint completed, so Recover publishes its committables (one
// already published counts as done), then removes every hidden in-progress
// or pending part no state names: what the failed attempt wrote after the
// checkpoint, which the replay writes again. Readers then see exactly the
// rows up to the checkpoint's barriers. Recover is idempotent: a failure
// during recovery is repaired by running it again. It does not care how
// the caller redistributes the states when rescaling; a restored writer
// takes only the Counter of the state it is given.
//
// A writer that takes no part in checkpoints (no AttemptID, no Restore, and
// never precommitted) publishes one file at Close, part-<subtask>.<ext>,
// even when empty, as before checkpoints existed: jobs without checkpoints
// keep their output names (mode ERROR: the directory was empty).
//
// # Modes: what a directory that already holds files gets
//
// A file sink's mode (planpb.FileSink_Mode, as Spark's SaveMode) is applied
// once per job at submission by Prepare, before any subtask writes, and not
// when the job restores from a checkpoint or savepoint (its directory holds
// the job's own committed parts). ERROR, the default, refuses a directory
// holding a visible entry; names starting with "." or "_" do not count, as
// in Spark, so hidden parts a crashed run left do not block a new run
// (readers skip them). OVERWRITE records the visible entries and deletes
// exactly those (Previous.Delete) once the job's output is committed: at
// the first completed checkpoint, or at the end of the job, whichever comes
// first; a failed run leaves them, and a restore deletes nothing. APPEND
// touches nothing. In OVERWRITE and APPEND a writer without checkpoints
// names its one file part-<id>-<subtask>.<ext>, so that it replaces no
// previous file; the job also holds such sinks' parts hidden until it ends.
//
// Limits: Close publishes at once, outside any checkpoint; if the job fails
// after some subtasks closed and restores an earlier checkpoint, their
// replayed rows are published twice. A caller that needs exactly-once up to
// the end takes a final checkpoint (PreCommit, then Commit when it
// completes) before Close, as Flink does since FLIP-147. Recover owns the
// sink's directory: it removes hidden parts of any writer, so two jobs must
// not share a directory, and the failed attempt's tasks must have stopped.
// Restoring a checkpoint older than the last one committed (an old
// savepoint) leaves the parts committed since then published, as in Flink.
//
// Print and collect sinks are at-least-once: rows leave at Write (a collect
// sink with CollectBatchBytes set holds them until it has enough, or until
// PreCommit or Close), and after a restore the replayed rows are printed or
// collected again. Their PreCommit returns an empty state and their Commit
// does nothing.
//
// This package does not know operators, exchanges, or where checkpoints are
// stored: the caller keeps SinkState (JSON) in the checkpoint.
package sink

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/internal/beneath"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
	"github.com/flinkgo/flinkgo/runtime/rowkind"
)

// ErrClosed is returned by Write and PreCommit after Close or Abort: a
// caller bug, the sink's rows are no longer accepted.
var ErrClosed = errors.New("sink: closed")

// Writer consumes one sink subtask's batches and takes part in its
// checkpoints. Its methods may be called from different goroutines (Commit
// from a checkpoint notification, say): a writer serializes them, so each
// blocks while another runs.
type Writer interface {
	// Write consumes b; the caller keeps ownership. It blocks on file I/O.
	// After Close or Abort it returns ErrClosed.
	Write(b arrow.RecordBatch) error
	// PreCommit is phase one of checkpoint checkpointID, called when the
	// barrier passes the sink, after every row before it was written. It
	// blocks on fsyncs, and returns the state to store in the checkpoint:
	// every part precommitted but not committed yet (of this and earlier
	// checkpoints) and the part counter. An error fails the checkpoint and
	// the writer (Write, PreCommit and Close then return it): the caller
	// fails the task and restores.
	PreCommit(checkpointID int64) (SinkState, error)
	// Commit is phase two: checkpoint checkpointID completed, so the parts
	// precommitted for it and for earlier checkpoints are published. It
	// blocks on renames and a directory fsync. Idempotent; it may be called
	// after Close or Abort (the parts of a completed checkpoint are
	// published all the same). A part it fails to publish stays pending for
	// the next Commit, or for Recover.
	Commit(checkpointID int64) error
	// Close ends the input: it finishes the current part and publishes it
	// with every pending part, whether or not their checkpoints completed.
	// It blocks on fsyncs. Call once; a second call returns nil.
	Close() error
	// Abort drops the part being written; precommitted parts stay for
	// Commit or Recover. After Close it does nothing. Safe to call twice.
	Abort()
}

// Config says which sink subtask a writer is. Open does not modify it.
type Config struct {
	Schema      *arrow.Schema
	Subtask     int
	Parallelism int
	// Stdout receives printed rows, one Write per batch; it must be safe
	// for concurrent use by the print subtasks. Default os.Stdout.
	Stdout io.Writer
	// Collect receives the batches of a collect sink (retained: it must
	// release them). Required for collect sinks.
	Collect func(subtask int, b arrow.RecordBatch) error
	// CollectBatchBytes, when above 0, makes a collect sink hand over
	// large batches: it holds its input until about this many bytes
	// arrived, then hands them over concatenated into one batch (also
	// before a checkpoint's barrier passes, and at the end). 0 hands each
	// batch over as it arrives: a sink whose input never ends needs that.
	CollectBatchBytes int
	// Allocator holds the batches a collect sink concatenates. Default
	// memory.DefaultAllocator.
	Allocator memory.Allocator
	// Restore is the state this subtask restores from (nil: a fresh
	// start). A file writer takes its Counter only: Recover, run before,
	// published its Pending.
	Restore *SinkState
	// AttemptID identifies this attempt of the job in part names: letters,
	// digits, '-' and '_', at most 64. It should differ between attempts
	// (a uuid); empty means a random id per writer.
	AttemptID string
	// Paths opens a file sink's directory (from the allowed directory it
	// lies under, on a server that restricts paths); nil opens it as
	// named.
	Paths beneath.Paths
}

func (c Config) validate() error {
	var errs []error
	if c.Schema == nil {
		errs = append(errs, errors.New("schema is nil"))
	}
	if c.Subtask < 0 {
		errs = append(errs, fmt.Errorf("subtask %d is below 0", c.Subtask))
	}
	if c.Restore != nil && c.Restore.Counter < 0 {
		errs = append(errs, fmt.Errorf("restored counter %d is below 0", c.Restore.Counter))
	}
	if len(c.AttemptID) > 64 || strings.IndexFunc(c.AttemptID, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_')
	}) >= 0 {
		errs = append(errs, fmt.Errorf("attempt id %q is not at most 64 letters, digits, '-' or '_'", c.AttemptID))
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("sink: invalid config: %w", errors.Join(errs...))
}

// Open returns the writer of one subtask of sink. A file writer creates the
// sink's directory; its first part is opened by the first row.
func Open(s *planpb.Sink, cfg Config) (Writer, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	switch k := s.GetKind().(type) {
	case *planpb.Sink_Print:
		out := cfg.Stdout
		if out == nil {
			out = os.Stdout
		}
		return &printWriter{out: out, prefix: printPrefix(cfg)}, nil
	case *planpb.Sink_Collect:
		if cfg.Collect == nil {
			return nil, errors.New("sink: collect sink without a Collect function")
		}
		return newCollectWriter(cfg), nil
	case *planpb.Sink_File:
		return openFile(k.File, cfg)
	case *planpb.Sink_Kafka:
		return openKafka(k.Kafka, cfg)
	}
	return nil, errors.New("sink: the sink node has no kind")
}

// printPrefix is Flink's: "<subtask+1>> " when several subtasks print.
func printPrefix(cfg Config) string {
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

var (
	_ Writer = (*printWriter)(nil)
	_ Writer = (*collectWriter)(nil)
	_ Writer = (*fileWriter)(nil)
)

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

func (w *printWriter) PreCommit(int64) (SinkState, error) { return SinkState{}, nil }
func (w *printWriter) Commit(int64) error                 { return nil }
func (w *printWriter) Close() error                       { return nil }
func (w *printWriter) Abort()                             {}
