package connector

import (
	"errors"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/internal/beneath"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
	"github.com/flinkgo/flinkgo/runtime/rowkind"
)

// SinkConnector is one kind of sink: the row of the registry a connector
// adds.
type SinkConnector struct {
	// Kind names the connector in plans: the field of planpb.Sink's kind
	// ("kafka", "file", ...) or ConnectorSink.kind.
	Kind string
	// Decode reads and validates a sink node's wire config. It does no
	// I/O: the planner calls it for every sink of a plan.
	Decode func(wire *planpb.Sink) (Sink, error)
}

// Sink is a decoded sink config. Embed NoJobSteps for the job-level steps
// of a sink that has none.
type Sink interface {
	// CheckSchema checks the sink's input schema against the config (a
	// Kafka sink's key and value columns), before anything connects.
	CheckSchema(in *arrow.Schema) error
	// Changelog says which changelog streams the sink writes.
	Changelog() Changelog
	// CheckChangelog returns the planner's error for a changelog input
	// the sink cannot write (in.Mode is not append-only), naming what to
	// do; nil when it writes it.
	CheckChangelog(in ChangelogInput) error
	// CommitsAtCheckpoints reports whether the writers are two-phase:
	// their PreCommit state goes into checkpoints and their output is
	// published by Commit (or, at the end of a job that holds it, by
	// CommitFinal); otherwise rows leave at Write or Close.
	CommitsAtCheckpoints() bool
	// HoldsOutputUntilEnd reports whether the job must hold the writers'
	// last precommits until every task has finished (a file sink writing
	// beside older files: a failed run adds nothing visible).
	HoldsOutputUntilEnd() bool
	// Open returns the writer of one sink subtask.
	Open(cfg WriterConfig) (Writer, error)
	// Prepare runs once at job submission, before any writer opens (a
	// file sink's mode on its directory). restoring: the job starts from
	// a checkpoint or savepoint. The Prepared, when non-nil, is told when
	// the job's output is first committed.
	Prepare(restoring bool, paths beneath.Paths) (Prepared, error)
	// Recover runs before every attempt's writers open, after the tasks
	// of a failed attempt stopped: it commits what the restored
	// checkpoint's subtasks precommitted and drops or aborts what attempts
	// left after it (lingering transactions).
	Recover(rc RecoverContext) error
	// CommitFinal publishes the last precommits of the writers, which the
	// job held until every task finished (HoldsOutputUntilEnd, or a
	// two-phase sink of a job that may restart).
	CommitFinal(states [][]byte, paths beneath.Paths) error
}

// Changelog is which changelog streams a sink writes (append-only streams
// every sink writes).
type Changelog struct {
	// Upsert: an upsert stream (+I, +U, -D by a key).
	Upsert bool
	// Retract: a retract stream (-U/+U pairs, -D of whole rows).
	Retract bool
}

// ChangelogInput is a changelog stream reaching a sink, as the planner
// describes it in its errors.
type ChangelogInput struct {
	Mode rowkind.Mode
	// Sink labels the sink node, From the operator making the stream.
	Sink, From string
	// Described is the stream's description with its key ("upsert stream
	// keyed by (k)").
	Described string
	// NotUpsertable says why a retract stream is not an upsert stream by
	// its maker's keys, and what to do.
	NotUpsertable func() string
}

// Prepared is told when a job's output is first committed (a completed
// checkpoint, or the end of the job): a file sink in mode "overwrite"
// deletes the files it found. A failure is retried at the next commit.
type Prepared interface {
	OutputCommitted() error
}

// RecoverContext is what a sink recovers from.
type RecoverContext struct {
	// States are the restored checkpoint's writer states by subtask (nil
	// when the job starts fresh, or the checkpoint has no state of the
	// sink).
	States map[int][]byte
	// Restoring: the attempt restores a checkpoint or savepoint.
	Restoring bool
	// Restarting: an earlier attempt of this job ran.
	Restarting bool
	// Parallelism is the sink's parallelism in this attempt.
	Parallelism int
	// Paths opens a file sink's directory; nil opens it as named.
	Paths beneath.Paths
}

// NoJobSteps is the job-level steps of a sink that has none: embed it.
type NoJobSteps struct{}

func (NoJobSteps) CommitsAtCheckpoints() bool { return false }
func (NoJobSteps) HoldsOutputUntilEnd() bool  { return false }
func (NoJobSteps) Prepare(bool, beneath.Paths) (Prepared, error) {
	return nil, nil
}
func (NoJobSteps) Recover(RecoverContext) error              { return nil }
func (NoJobSteps) CommitFinal([][]byte, beneath.Paths) error { return nil }

// ErrClosed is returned by Write and PreCommit after Close or Abort: a
// caller bug, the sink's rows are no longer accepted.
var ErrClosed = errors.New("sink: closed")

// Writer consumes one sink subtask's batches and takes part in its
// checkpoints. Its methods may be called from different goroutines (Commit
// from a checkpoint notification, say): a writer serializes them, so each
// blocks while another runs.
type Writer interface {
	// Write consumes b; the caller keeps ownership. After Close or Abort
	// it returns ErrClosed.
	Write(b arrow.RecordBatch) error
	// PreCommit is phase one of checkpoint checkpointID, called when the
	// barrier passes the sink, after every row before it was written. It
	// returns the state the checkpoint keeps, in the connector's own
	// encoding (nil: none). An error fails the checkpoint and the writer.
	PreCommit(checkpointID int64) ([]byte, error)
	// Commit is phase two: checkpoint checkpointID completed, so what was
	// precommitted for it and for earlier checkpoints is published.
	// Idempotent; it may be called after Close or Abort.
	Commit(checkpointID int64) error
	// Close ends the input: what was written is published. Call once; a
	// second call returns nil.
	Close() error
	// Abort drops what no checkpoint owns; precommitted output stays for
	// Commit or Recover. After Close it does nothing. Safe to call twice.
	Abort()
}

// WriterConfig says which sink subtask a writer is.
type WriterConfig struct {
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
	// batches of about this many bytes (see connectors/collect).
	CollectBatchBytes int
	// Allocator holds the batches a writer builds. Default
	// memory.DefaultAllocator.
	Allocator memory.Allocator
	// Restoring: the subtask restores from a checkpoint; Restore is then
	// the state of the old subtask of the same index (nil when it had
	// none). Recover, run before, committed what it precommitted.
	Restoring bool
	Restore   []byte
	// AttemptID identifies this attempt of the job (in part names,
	// transactional ids): letters, digits, '-' and '_', at most 64; empty
	// means a random id per writer.
	AttemptID string
	// Paths opens a file sink's directory; nil opens it as named.
	Paths beneath.Paths
}
