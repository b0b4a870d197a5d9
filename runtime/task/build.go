package task

import (
	"log/slog"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/runtime/checkpoint"
	"github.com/flinkgo/flinkgo/runtime/metrics"
	"github.com/flinkgo/flinkgo/runtime/operator"
	"github.com/flinkgo/flinkgo/runtime/plan"
)

// Config is what building the tasks of one attempt needs.
type Config struct {
	Graph    *plan.Graph
	Registry *operator.Registry
	// Counters has one entry per operator of Graph; they outlive attempts.
	Counters []operator.Counters
	// TaskMetrics, when set, holds the metrics of every chain head's
	// subtasks, indexed by operator ID then subtask (see ChainHeads); they
	// outlive attempts. Nil: each task counts for itself only.
	TaskMetrics [][]*metrics.Task
	// ChannelCapacity is how many batches an inbox holds, shared out
	// among its producers (at least two each): a producer whose share is
	// queued blocks.
	ChannelCapacity int
	Allocator       memory.Allocator
	// StateDir is where keyed operators make their scratch directories.
	StateDir string
	// UDFMetrics, when set, holds the UDF metrics of the operators with
	// a Python worker; they outlive attempts. Nil: each counts for itself.
	UDFMetrics *metrics.UDFs
	// WorkerPools, when set, sizes and records the worker pools of the
	// stateless UDF operators (operator.Context.Workers).
	WorkerPools *operator.WorkerPools
	Logger      *slog.Logger
	// JobID and Attempt (counted from 1) name the job and its attempt in
	// the log lines of the tasks (ident.Subtask); "" and 0 outside a job.
	JobID   string
	Attempt int
	// From is the snapshot to restore, nil for a fresh start.
	From *checkpoint.RestorePoint
	// AttemptID names the attempt for sinks' part files; "" when no
	// attempt may follow.
	AttemptID string
	// PublishAtEnd, when set, receives a two-phase sink subtask's last
	// precommitted state, to commit when the job ends
	// (operator.Context.PublishAtEnd).
	PublishAtEnd func(op *plan.Operator, state []byte)
	// ErrorNamesOrigin reports whether an operator's error already says
	// where it happened (a Python worker's error names the UDF and the
	// worker): the task keeps such an error as it is rather than naming the
	// operator in it. The operators supply it (operators.ErrorNamesOrigin);
	// nil: every error is named after its operator.
	ErrorNamesOrigin func(error) bool
}

type buildContext struct {
	Config
	schemas []*arrow.Schema
	inboxes [][]*inbox
	outs    [][]outputs
	set     *Set
	// endsLeft counts, per source operator, the limits that have yet to
	// end it (plan.Operator.EndAfter).
	endsLeft []atomic.Int64
}

// endInput is a limit's operator.Context.EndInput: each source it ends
// stops once every limit that ends it has passed its rows.
func (bc *buildContext) endInput(limit *plan.Operator) {
	for _, src := range limit.Ends {
		if bc.endsLeft[src].Add(-1) != 0 {
			continue
		}
		for _, t := range bc.set.Tasks {
			if t.head.op.ID == src {
				t.EndSource()
			}
		}
	}
}

// Set is every task of one attempt, with the channels between them.
type Set struct {
	Tasks   []*Task
	inboxes [][]*inbox
}

// Build builds every task of the graph, one per subtask of each chain, and
// the exchange between them. Nothing runs until the tasks' Run.
func Build(cfg Config) (*Set, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	g := cfg.Graph
	sch, err := cfg.Registry.Schemas(g)
	if err != nil {
		return nil, err
	}
	inboxes, outs, err := wire(g, sch, cfg.ChannelCapacity, cfg.Allocator)
	if err != nil {
		return nil, err
	}
	s := &Set{inboxes: inboxes}
	bc := &buildContext{Config: cfg, schemas: sch, inboxes: inboxes, outs: outs, set: s,
		endsLeft: make([]atomic.Int64, len(g.Operators))}
	for _, op := range g.Operators {
		bc.endsLeft[op.ID].Store(int64(op.EndAfter))
	}
	for _, head := range g.Operators {
		if isChained(g, head.ID) {
			continue // runs inside its chain head's task
		}
		for i := range head.Parallelism {
			t, err := build(bc, head, i)
			if err != nil {
				s.Release()
				return nil, err
			}
			s.Tasks = append(s.Tasks, t)
		}
	}
	return s, nil
}

// Release frees the tasks of a set that never ran, and the restored
// channel state queued for them.
func (s *Set) Release() {
	for _, t := range s.Tasks {
		t.Release()
	}
	s.Drain()
}

// Drain frees the batches still queued between tasks, once no task runs.
func (s *Set) Drain() {
	for _, subtasks := range s.inboxes {
		for _, in := range subtasks {
			in.drain()
		}
	}
}

// ChainHeads returns the operators that head a chain, in topological
// order: each runs as one task per subtask (Flink's job vertex), the
// operators chained to it inside that task.
func ChainHeads(g *plan.Graph) []*plan.Operator {
	var heads []*plan.Operator
	for _, op := range g.Operators {
		if !isChained(g, op.ID) {
			heads = append(heads, op)
		}
	}
	return heads
}
