// Package source reads a plan's sources as Arrow record batches, one reader
// per source subtask: in-memory tables shipped in the plan, CSV, JSON lines
// and Parquet files, and the data generator.
//
// Work is split between subtasks as Flink splits it: files by index (file i
// goes to subtask i mod p, read whole, in order), in-memory tables by chunk
// (chunk j of BatchRows rows to subtask j mod p), and bounded generated rows
// by contiguous range ([i*n/p, (i+1)*n/p)). Errors name the file and, for a
// CSV value that does not parse, its line and column.
//
// This package does not know operators or exchanges: it only produces
// batches.
package source

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/udf/proto/planpb"
)

// Reader yields the batches of one source subtask.
type Reader interface {
	// Next returns the next batch, which the caller releases, or io.EOF at
	// the end of a bounded source. It blocks only for rate limiting and
	// I/O, and returns ctx's cause when ctx ends.
	Next(ctx context.Context) (arrow.RecordBatch, error)
	// Close frees the reader's files and buffers. Safe to call twice.
	Close() error
}

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
}

func (c Config) withDefaults() Config {
	if c.BatchRows == 0 {
		c.BatchRows = 10000
	}
	if c.Allocator == nil {
		c.Allocator = memory.DefaultAllocator
	}
	return c
}

func (c Config) validate() error {
	var errs []error
	if c.Schema == nil {
		errs = append(errs, errors.New("Schema is nil"))
	}
	if c.Parallelism < 1 || c.Subtask < 0 || c.Subtask >= c.Parallelism {
		errs = append(errs, fmt.Errorf("subtask %d of parallelism %d is out of range", c.Subtask, c.Parallelism))
	}
	if c.BatchRows < 1 {
		errs = append(errs, fmt.Errorf("BatchRows is %d; it must be positive", c.BatchRows))
	}
	if len(errs) > 0 {
		return fmt.Errorf("source: invalid config: %w", errors.Join(errs...))
	}
	return nil
}

// Open returns the reader of cfg's share of src.
func Open(src *planpb.Source, cfg Config) (Reader, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	switch k := src.GetKind().(type) {
	case *planpb.Source_Arrow:
		return openArrow(k.Arrow, cfg)
	case *planpb.Source_File:
		return openFiles(k.File, cfg)
	case *planpb.Source_Datagen:
		return newDatagen(k.Datagen, cfg)
	}
	return nil, errors.New("source: the source node has no kind")
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
