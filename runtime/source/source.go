// Package source reads a plan's sources as Arrow record batches, one reader
// per source subtask: in-memory tables shipped in the plan, CSV, JSON lines
// and Parquet files, the data generator, Nexmark-shaped auction events
// (nexmark.go), and Kafka topics. Errors name the
// file and, for a CSV value or JSON record that does not parse, its line.
//
// # Splits
//
// Every source is cut into splits that do not depend on the parallelism, and
// each split goes to one subtask by a pure function of the split and the
// parallelism p, so that all subtasks agree without talking:
//
//   - files: one split per path, id the path (the k-th repeat of a path,
//     k ≥ 2, is "<path>#<k>"); the file at index i of the plan's paths goes to
//     subtask i mod p. A subtask reads its files one after another, in order.
//   - in-memory tables, bounded generated rows and Nexmark events: the n
//     rows (events) are cut into 128 ranges, range k = [k*n/128,
//     (k+1)*n/128) with id
//     "range-<start>-<end>" (empty ranges are dropped); range k goes to
//     subtask k*p/128, as key groups do (so each subtask reads one contiguous
//     run of rows, in order, and parallelism 1 reads the rows in order).
//     Batches run across the ranges of a subtask; an in-memory batch also
//     never spans two record batches of the shipped table.
//   - unbounded generated rows: 128 lanes, lane k generating the rows k,
//     k+128, k+256, … with id "lane-<k>-of-128"; lane k goes to subtask
//     k mod p, which emits the rows of its lanes in increasing row order (so
//     when p divides 128 subtask i emits i, i+p, i+2p, …).
//   - Kafka: one split per partition, id "<topic>-<partition>", owned as
//     Flink's KafkaSource assigns them (kafka.go); partitions created while
//     the job runs are discovered and owned by the same rule.
//
// With more than 128 subtasks, the subtasks that own no range or lane read
// nothing. Generated rows are limited to rows_per_second in total: each
// subtask gets the share of the rate of its rows (bounded) or lanes.
//
// # Positions
//
// Reader.Snapshot returns the position of every split the reader owns, as a
// SplitState, just after the last batch Next returned. Restoring
// (Config.Restore) follows Flink's union-list redistribution: every subtask
// gets the union of the snapshots of all subtasks, keeps the splits it owns
// at its own parallelism and resumes each from its state there: Done splits
// are skipped, splits with an Offset resume there, splits absent from the
// union start from the beginning (a file added to the paths), and states of
// splits the source no longer has are ignored. The Offset is a small JSON
// object whose fields depend on the kind of split:
//
//   - CSV: {"row": r}, the data rows of the file already returned. Resuming
//     re-parses the first r records with encoding/csv to find where they end
//     (arrow-go's reader reads ahead, so byte offsets of batch ends are not
//     known): a cost linear in the bytes already read, paid once per file per
//     restore.
//   - JSON lines: {"byte": b, "line": l}, the byte offset just after the last
//     record returned, and the line it is on. Resuming seeks there.
//   - Parquet: {"row_group": g, "row": r}, the next row to read. Resuming
//     skips to row group g and seeks to row r within it.
//   - ranges and lanes: {"next": j}, the rows of the range (or lane) already
//     returned (for Nexmark, the events of the range already generated, of
//     every kind).
//   - Kafka partitions: {"next": n, "stop": s}, the offset of the next record
//     and, bounded, the offset to stop at.
//
// An Offset that does not decode, or points past its split's data, fails
// Open or Next with ErrBadOffset.
//
// This package does not know operators, exchanges or the checkpoint storage:
// it only produces batches and positions.
package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/internal/beneath"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
)

// SplitReporter is a Reader that says which split each batch came from,
// so that an operator chained right after the source (a watermark
// assigner) can keep state per split, as Flink's per-split watermarks.
// File sources report their files; the batches of ranges and lanes run
// across splits, so those readers do not report.
type SplitReporter interface {
	Reader
	// LastSplit is the id of the split the batch Next returned last was
	// read from.
	LastSplit() string
	// PendingSplits are the ids of the reader's splits not read to their
	// end, in reading order (the one being read among them).
	PendingSplits() []string
}

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

// CheckpointListener is a Reader told about the checkpoints that hold its
// positions, as Flink's SourceReader.notifyCheckpointComplete: the Kafka
// source commits its offsets to the consumer group once the checkpoint
// holding them completed (for monitoring; restores use the checkpoint).
// Both methods run on the goroutine that calls Next and must not block.
type CheckpointListener interface {
	// CheckpointTaken says the positions Snapshot returned last are
	// checkpoint id's.
	CheckpointTaken(id int64)
	// CheckpointComplete says checkpoint id completed.
	CheckpointComplete(id int64)
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

// SplitState is the position of one split of a source: which split (a stable
// id: the file path, "range-<start>-<end>", "lane-<k>-of-128") and how far it
// was read. It is JSON-serializable; the package doc describes the splits and
// offsets of each kind of source.
type SplitState struct {
	Split  string `json:"split"`
	Offset []byte `json:"offset,omitempty"` // opaque to callers; encoding is per source kind
	Done   bool   `json:"done,omitempty"`   // read to the end
}

// ErrBadOffset is wrapped by the error of Open or Next when a restored
// split's Offset does not decode or points past the split's data: the
// checkpoint is of another source, or a file shrank or was replaced since.
// The source cannot resume from that checkpoint; restore from another one,
// or without the source's state to read it from the start.
var ErrBadOffset = errors.New("source: bad split offset")

// Config says which share of the source a reader reads.
type Config struct {
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
	// The reader resumes the splits it owns from there (see the package
	// doc). Open does not modify it.
	Restore []SplitState
	// Paths opens the files of file sources (from the allowed directory
	// they lie under, on a server that restricts paths); nil opens them as
	// named.
	Paths beneath.Paths
}

// open opens a file source's file for reading.
func (c Config) open(path string) (*os.File, error) {
	return beneath.Open(c.Paths, "the file source's file", path)
}

func (c Config) withDefaults() Config {
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

func (c Config) validate() error {
	var errs []error
	if c.Schema == nil {
		//lint:ignore ST1005 the message starts with the name of the field or method at fault
		errs = append(errs, errors.New("Schema is nil"))
	}
	if c.Parallelism < 1 || c.Subtask < 0 || c.Subtask >= c.Parallelism {
		errs = append(errs, fmt.Errorf("subtask %d of parallelism %d is out of range", c.Subtask, c.Parallelism))
	}
	if c.BatchRows < 1 {
		errs = append(errs, fmt.Errorf("BatchRows is %d; it must be positive", c.BatchRows))
	}
	if _, err := restoreMap(c.Restore); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return fmt.Errorf("source: invalid config: %w", errors.Join(errs...))
	}
	return nil
}

// Open returns the reader of cfg's share of src, resumed from cfg.Restore
// when it is set.
func Open(src *planpb.Source, cfg Config) (Reader, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	restore, _ := restoreMap(cfg.Restore) // validated
	switch k := src.GetKind().(type) {
	case *planpb.Source_Arrow:
		return openArrow(k.Arrow, cfg, restore)
	case *planpb.Source_File:
		return openFiles(k.File, cfg, restore)
	case *planpb.Source_Datagen:
		return newDatagen(k.Datagen, cfg, restore)
	case *planpb.Source_Kafka:
		return openKafka(k.Kafka, cfg, restore)
	case *planpb.Source_Nexmark:
		return newNexmark(k.Nexmark, cfg, restore)
	}
	return nil, errors.New("source: the source node has no kind")
}

// Bounded reports whether a source ends: in-memory tables, files and
// Nexmark events do, a generator does when it has a row count (rows = 0
// generates forever), a Kafka source when it stops at the latest offsets
// of its start.
// The planner reads it (a keyed aggregation over an unbounded input emits
// updates); each kind of source declares it here, beside Open.
func Bounded(src *planpb.Source) bool {
	switch k := src.GetKind().(type) {
	case *planpb.Source_Datagen:
		return k.Datagen.GetRows() > 0
	case *planpb.Source_Kafka:
		return k.Kafka.GetBoundedLatest()
	}
	return true
}

// WhyEndless says, for errors, why a source that Bounded says never ends
// does not: "datagen without rows=".
func WhyEndless(src *planpb.Source) string {
	switch src.GetKind().(type) {
	case *planpb.Source_Datagen:
		return "datagen without rows="
	case *planpb.Source_Kafka:
		return `read_kafka without bounded="latest"`
	}
	return "a source that never ends"
}

// ReadAll drains r; the caller releases the batches. For tests and
// collecting small sources.
func ReadAll(ctx context.Context, r Reader) ([]arrow.RecordBatch, error) {
	var out []arrow.RecordBatch
	for {
		b, err := r.Next(ctx)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			for _, b := range out {
				b.Release()
			}
			return nil, err
		}
		out = append(out, b)
	}
}
