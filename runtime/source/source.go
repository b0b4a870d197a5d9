// Package source has what the readers of every connector share (split
// ranges, offsets, restore maps: split.go; the rate Pacer: pace.go; Mix:
// mix.go) and the readers of in-memory tables and of CSV, JSON lines and
// Parquet files, for connectors/memory and connectors/files; the
// generators' and Kafka's readers are their connector packages'. Errors
// name the file and, for a CSV value or JSON record that does not parse,
// its line.
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
//     Flink's KafkaSource assigns them (connectors/kafka); partitions created while
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
	"os"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flinkgo/flinkgo/internal/beneath"
	"github.com/flinkgo/flinkgo/runtime/connector"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
)

// The reader contract is package connector's; these names keep the
// readers of this package short.
type (
	Reader             = connector.Reader
	SplitState         = connector.SplitState
	SplitReporter      = connector.SplitReporter
	Waiter             = connector.Waiter
	CheckpointListener = connector.CheckpointListener
	Backlog            = connector.Backlog
	Throttled          = connector.Throttled
	// Config says which share of the source a reader reads.
	Config = connector.ReaderConfig
)

var (
	// ErrNoData: see connector.ErrNoData.
	ErrNoData = connector.ErrNoData
	// ErrBadOffset: see connector.ErrBadOffset.
	ErrBadOffset = connector.ErrBadOffset
)

// openFile opens a file source's file for reading.
func openFile(c Config, path string) (*os.File, error) {
	return beneath.Open(c.Paths, "the file source's file", path)
}

// CheckConfig checks a reader's config (defaults filled): schema,
// subtask and parallelism, batch size, restored states.
func CheckConfig(c Config) error { return validate(c) }

func validate(c Config) error {
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
	if _, err := RestoreMap(c.Restore); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return fmt.Errorf("source: invalid config: %w", errors.Join(errs...))
	}
	return nil
}

// prepare fills cfg's defaults, validates it and indexes its Restore.
func prepare(cfg Config) (Config, map[string]SplitState, error) {
	cfg = cfg.WithDefaults()
	if err := validate(cfg); err != nil {
		return cfg, nil, err
	}
	restore, _ := RestoreMap(cfg.Restore) // validated
	return cfg, restore, nil
}

// OpenArrow returns the reader of cfg's share of an in-memory table,
// resumed from cfg.Restore when it is set.
func OpenArrow(src *planpb.ArrowSource, cfg Config) (Reader, error) {
	cfg, restore, err := prepare(cfg)
	if err != nil {
		return nil, err
	}
	return openArrow(src, cfg, restore)
}

// OpenFiles returns the reader of cfg's share of a file source.
func OpenFiles(src *planpb.FileSource, cfg Config) (Reader, error) {
	cfg, restore, err := prepare(cfg)
	if err != nil {
		return nil, err
	}
	return openFiles(src, cfg, restore)
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
