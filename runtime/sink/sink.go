// Package sink has the writer of the file connector (connectors/files):
// part files (CSV, JSON lines, Parquet), on package connector's Writer.
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
// Print and collect sinks are at-least-once; they are connectors/print and
// connectors/collect.
//
// This package does not know operators, exchanges, or where checkpoints are
// stored: the caller keeps the writers' PreCommit bytes in the checkpoint.
package sink

import (
	"errors"
	"fmt"
	"strings"

	"github.com/flinkgo/flinkgo/runtime/connector"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
)

// The writer contract is package connector's; these names keep the
// writers of this package short.
type (
	Writer = connector.Writer
	// Config says which sink subtask a writer is. Open does not modify it.
	Config = connector.WriterConfig
)

// ErrClosed: see connector.ErrClosed.
var ErrClosed = connector.ErrClosed

// validate checks cfg; restored decodes the restored state of the writer's
// kind, so that its problems are reported with the others.
func validate(c Config, restored func([]byte) error) error {
	var errs []error
	if c.Schema == nil {
		errs = append(errs, errors.New("schema is nil"))
	}
	if c.Subtask < 0 {
		errs = append(errs, fmt.Errorf("subtask %d is below 0", c.Subtask))
	}
	if len(c.AttemptID) > 64 || strings.IndexFunc(c.AttemptID, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_')
	}) >= 0 {
		errs = append(errs, fmt.Errorf("attempt id %q is not at most 64 letters, digits, '-' or '_'", c.AttemptID))
	}
	if c.Restoring && restored != nil {
		if err := restored(c.Restore); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("sink: invalid config: %w", errors.Join(errs...))
}

// OpenFile returns the writer of one subtask of a file sink. It creates
// the sink's directory; its first part is opened by the first row.
func OpenFile(s *planpb.FileSink, cfg Config) (Writer, error) {
	if err := validate(cfg, func(b []byte) error { _, err := DecodeState(b); return err }); err != nil {
		return nil, err
	}
	return openFile(s, cfg)
}
