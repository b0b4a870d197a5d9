package operator

import (
	"log/slog"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/runtime/checkpoint"
	"github.com/flinkgo/flinkgo/runtime/connector"
	"github.com/flinkgo/flinkgo/runtime/metrics"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/state"
)

// Context is what an operator subtask is built with: which subtask of which
// operator it is, its schemas, and the services of the job it runs in.
// Factories may keep it.
type Context struct {
	Op          *plan.Operator
	Subtask     int
	Parallelism int
	// MaxParallelism is the job's number of key groups.
	MaxParallelism int
	// In are the schemas of the operator's inputs, in plan order; Out its
	// output schema (as the registry's Schema computed them).
	In  []*arrow.Schema
	Out *arrow.Schema
	// Allocator holds every batch.
	Allocator memory.Allocator
	// Logger names the operator and subtask. Never nil.
	Logger *slog.Logger
	// Counters count the rows of the operator, over all its subtasks; the
	// task counts rows in and out, operators may read them.
	Counters *Counters
	// Restored is the operator's state in the snapshot the job starts
	// from (all its old subtasks'), nil for a fresh start; relative paths
	// inside resolve against RestoreBase.
	Restored    *checkpoint.OperatorState
	RestoreBase string
	// Keyed is the subtask's keyed state access, for kinds whose
	// StateDescriptor says Keyed; nil otherwise.
	Keyed *KeyedContext
	// AttemptID names the attempt, "" when no attempt may follow (sinks
	// name their part files with it).
	AttemptID string
	// PublishAtEnd, when set, takes a two-phase sink subtask's last
	// precommitted state (its connector's bytes) at the end of its input:
	// the job commits them when every task has finished
	// (connector.Sink.CommitFinal), so that a restart before then replays
	// no row of published output.
	PublishAtEnd func(state []byte)
	// Watermarks sends the watermarks and statuses the operator makes
	// itself downstream (a watermark assigner's); the task sets it.
	Watermarks WatermarkOutput
	// SourceSplits is set for an operator chained to a source whose reader
	// reports its splits (files), directly or through selects and filters
	// only: during Process its LastSplit is the split the batch came from.
	// Nil otherwise.
	SourceSplits connector.SplitReporter
	// LateRows[i] emits on the late-rows output of input i
	// (plan.LateRowsOutput + i): a node with late_rows=KEEP sends there,
	// unchanged, the rows of input i it found late (a window's rows too
	// late for every window, as Flink's sideOutputLateData; an interval
	// join's rows behind the watermark, as sideOutputLeft/RightLateData).
	// Each takes ownership of the batch; an entry is nil, or missing,
	// when no edge reads that output.
	LateRows []Emit
	// EndInput tells the runtime the operator needs no more input (a
	// limit whose rows have passed): the sources in Op.Ends stop reading
	// once every limit that ends them has called it, and end their
	// streams as at the end of their data, so the job ends FINISHED.
	// Safe from any goroutine, more than once; nil when Op.Ends is empty.
	EndInput func()
	// UDFs holds the job's UDF metrics (operators with a Python worker
	// take theirs with UDFMetrics); nil: the operator counts for itself.
	UDFs *metrics.UDFs
	// Workers holds the worker pools of the job's stateless UDF operators:
	// how many workers a subtask starts with, and where it registers its
	// pool so that a rescale resizes it in place. Nil: one worker each.
	Workers *WorkerPools
}

// UDFMetrics returns the metrics of this operator subtask's Python
// workers, which outlive the attempt; give them to its runners.
func (c *Context) UDFMetrics() *metrics.UDF {
	if c.UDFs == nil {
		return metrics.NewUDF()
	}
	return c.UDFs.For(c.Op.ID, c.Subtask, c.Parallelism)
}

// KeyedContext is where a keyed operator subtask keeps its keyed state.
type KeyedContext struct {
	// KeyGroups are the key groups the subtask owns.
	KeyGroups state.KeyGroupRange
	// StateDir is the parent of the subtask's scratch directory (its
	// Pebble database); "" for the system's temporary directory.
	StateDir string
}

// Counters count an operator's rows: in, out, and the rows a window
// dropped as too late for every window they belong to (Flink's
// numLateRecordsDropped).
type Counters struct{ In, Out, LateRecordsDropped atomic.Int64 }

// Input is the schema of the operator's only input, or nil for none.
func (c *Context) Input() *arrow.Schema {
	if len(c.In) == 0 {
		return nil
	}
	return c.In[0]
}
