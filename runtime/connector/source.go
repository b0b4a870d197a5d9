package connector

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/internal/beneath"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
)

// SourceConnector is one kind of source: the row of the registry a
// connector adds.
type SourceConnector struct {
	// Kind names the connector in plans: the field of planpb.Source's kind
	// ("kafka", "file", ...) or ConnectorSource.kind.
	Kind string
	// Decode reads and validates a source node's wire config. It does no
	// I/O: the planner calls it for every source of a plan.
	Decode func(wire *planpb.Source) (Source, error)
}

// Source is a decoded source config.
type Source interface {
	// CheckSchema checks the columns the source node declares against
	// the config (a Kafka source's key and value columns, Nexmark's
	// event columns), before anything connects.
	CheckSchema(schema *arrow.Schema) error
	// Boundedness says whether the source ends.
	Boundedness() Boundedness
	// Open returns the reader of cfg's share of the source, resumed from
	// cfg.Restore when it is set.
	Open(cfg ReaderConfig) (Reader, error)
}

// Boundedness is whether a source ends, and why not when it does not.
type Boundedness struct {
	Bounded bool
	// WhyEndless says, for the planner's errors, what makes an endless
	// source so: "datagen without rows=".
	WhyEndless string
}

// ReaderConfig says which share of the source a reader reads.
type ReaderConfig struct {
	// Schema is the source node's output schema. Required.
	Schema      *arrow.Schema
	Subtask     int
	Parallelism int
	// BatchRows is the largest batch a reader returns. Default 10000.
	BatchRows int
	// Allocator holds the batches. Default memory.DefaultAllocator.
	Allocator memory.Allocator
	// Logger takes what a reader reports without failing (a Kafka
	// source's failed offset commit). Default: discarded.
	Logger *slog.Logger
	// Restore, when non-nil, is the union of the snapshots of all subtasks
	// of the source at a checkpoint, possibly taken at another parallelism.
	// The reader resumes the splits it owns from there. Open does not
	// modify it.
	Restore []SplitState
	// Paths opens the files of file sources (from the allowed directory
	// they lie under, on a server that restricts paths); nil opens them as
	// named.
	Paths beneath.Paths
}

// WithDefaults fills the unset fields that have defaults.
func (c ReaderConfig) WithDefaults() ReaderConfig {
	if c.BatchRows == 0 {
		c.BatchRows = 10000
	}
	if c.Allocator == nil {
		c.Allocator = memory.DefaultAllocator
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Reader yields the batches of one source subtask.
type Reader interface {
	// Next returns the next batch, which the caller releases, or io.EOF at
	// the end of a bounded source. It blocks only for rate limiting and
	// I/O, and returns ctx's cause when ctx ends.
	Next(ctx context.Context) (arrow.RecordBatch, error)
	// Snapshot returns the position of every split the reader owns, just
	// after the last batch Next returned: restoring from the union of the
	// snapshots of all subtasks re-reads nothing already returned and skips
	// nothing. It does no I/O and does not block; call it between Next
	// calls, from the goroutine that calls Next, as often as needed. The
	// result is the caller's. After Close it returns the positions at Close.
	Snapshot() ([]SplitState, error)
	// Close frees the reader's files and buffers. Safe to call twice.
	Close() error
}

// SplitState is the position of one split of a source: which split (an id
// stable across parallelisms: a file path, "<topic>-<partition>") and how
// far it was read. The runtime keeps it in checkpoints as JSON.
type SplitState struct {
	Split string `json:"split"`
	// Offset is the connector's own encoding of the position; the runtime
	// stores it as it is.
	Offset []byte `json:"offset,omitempty"`
	Done   bool   `json:"done,omitempty"` // read to the end
}

// ErrBadOffset is wrapped by the error of Open or Next when a restored
// split's Offset does not decode or points past the split's data: the
// checkpoint is of another source, or a file shrank or was replaced since.
// The source cannot resume from that checkpoint; restore from another one,
// or without the source's state to read it from the start.
var ErrBadOffset = errors.New("source: bad split offset")

// ErrNoData is returned by Next of an unbounded source that has nothing to
// return now (a Kafka topic with no new records): the caller handles its
// own events (barriers, timers) and waits on Available before calling Next
// again, so that an idle source never holds a checkpoint back. Only a
// Waiter returns it.
var ErrNoData = errors.New("source: no data now")

// Waiter is a Reader whose Next may return ErrNoData rather than block.
type Waiter interface {
	Reader
	// Available is signaled when Next may have data (or an error, or the
	// end) again; a signal can be spurious. The channel is the reader's
	// for its life.
	Available() <-chan struct{}
}

// SplitReporter is a Reader that says which split each batch came from,
// so that an operator chained right after the source (a watermark
// assigner) can keep state per split, as Flink's per-split watermarks.
type SplitReporter interface {
	Reader
	// LastSplit is the id of the split the batch Next returned last was
	// read from.
	LastSplit() string
	// PendingSplits are the ids of the reader's splits not read to their
	// end, in reading order (the one being read among them).
	PendingSplits() []string
}

// CheckpointListener is a Reader told about the checkpoints that hold its
// positions, as Flink's SourceReader.notifyCheckpointComplete. Both
// methods run on the goroutine that calls Next and must not block.
type CheckpointListener interface {
	// CheckpointTaken says the positions Snapshot returned last are
	// checkpoint id's.
	CheckpointTaken(id int64)
	// CheckpointComplete says checkpoint id completed.
	CheckpointComplete(id int64)
}

// Backlog is a Reader that knows how many records it is behind (Flink's
// pendingRecords metric), which the autoscaler reads. Call it from the
// goroutine that calls Next.
type Backlog interface {
	PendingRecords() int64
}

// Throttled is a Reader held to a rate: ThrottledTime is the time its Next
// calls have slept for the rate, in total. The task counts that time as
// idle, not busy. Call it from the goroutine that calls Next.
type Throttled interface {
	ThrottledTime() time.Duration
}
