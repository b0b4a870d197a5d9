package plan

import (
	"fmt"

	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
	"github.com/flinkgo/flinkgo/udf/bridge/proto/workerpb"
)

// This file is the runtime's model of a job plan: what the client sent,
// decoded once from the wire form (planpb) by Decode, where a plan enters
// the runtime. The planner, Explain, the operators and checkpoint metadata
// read it; below Decode nothing reads planpb (but the connectors' configs,
// Source.Config and Sink.Config, until issue 24 item 2).
//
// The model keeps what the client sent, valid or not: Decode translates
// and then validates, so that one error lists every problem with the
// user's step named (node id, name, uid). UDF specs stay the worker
// protocol's (workerpb.UdfSpec): they are sent to the Python worker as they
// came.

// JobPlan is a job's logical plan: nodes in topological order (every input
// names a node listed earlier).
type JobPlan struct {
	Name string
	// DefaultParallelism is the parallelism of nodes that set none; 0 means
	// the runtime's default.
	DefaultParallelism int
	// Config holds options by Flink-style key (runtime/config). Read-only.
	Config map[string]string
	// Nodes may hold nil entries when the client sent empty ones: the
	// validation reports them.
	Nodes []*Node
}

// Node is one logical node: a user's step (a source, select, join, ...).
// Kind says which of the kind fields is set; the others are nil.
type Node struct {
	// ID is unique within the plan; inputs refer to it.
	ID int
	// UID is the user's uid (`.uid(...)`), empty when not given.
	UID string
	// Name is the short description for explanations, e.g. "filter(x > 3)".
	Name string
	// Parallelism is the explicit parallelism, 0 when not given.
	Parallelism int
	// Inputs may hold nil entries when the client sent empty ones.
	Inputs []*Input
	// OutputSchema is the Arrow IPC stream of the node's output schema the
	// client computed (no batches). The planner never decodes it.
	OutputSchema []byte
	// Kind is 0 when the node has no kind (the validation reports it).
	Kind Kind

	Source            *Source
	Select            *Select
	Filter            *Filter
	MapBatches        *MapBatches
	KeyedAggregate    *KeyedAggregate
	Sink              *Sink
	DropDuplicates    *DropDuplicates
	Limit             *Limit
	WatermarkAssigner *WatermarkAssigner
	WindowAggregate   *WindowAggregate
	IntervalJoin      *IntervalJoin
	Join              *Join
}

// GetSource returns a source node's connector config, nil for other nodes
// (and for a nil node). The source operator and package source read it.
func (n *Node) GetSource() *planpb.Source {
	if n == nil || n.Source == nil {
		return nil
	}
	return n.Source.Config
}

// GetSink returns a sink node's connector config, nil for other nodes (and
// for a nil node). The sink operator and package sink read it.
func (n *Node) GetSink() *planpb.Sink {
	if n == nil || n.Sink == nil {
		return nil
	}
	return n.Sink.Config
}

// Input is one incoming edge of a node and how its rows are distributed.
type Input struct {
	// Node is the id of the node read.
	Node int
	// Partitioning is PartitionUnset when none was asked for.
	Partitioning Partitioning
	// Keys are the key columns of PartitionHash.
	Keys []string
	// Output is which output of Node the edge reads: MainOutput, or the
	// late rows of a window or an interval join (LateRowsOutput,
	// LateRowsRightOutput).
	Output int
}

// Partitioning is how an edge distributes its rows over the consumer's
// subtasks (Flink's partitioners).
type Partitioning int

// The partitionings. The values are the wire form's.
const (
	// PartitionUnset: no partitioning asked for, forward as Flink's default
	// edge. The planner turns it into PartitionForward (Edge.Explicit false).
	PartitionUnset Partitioning = iota
	// PartitionForward: `.forward()`, the same subtask index.
	PartitionForward
	PartitionRebalance
	PartitionRescale
	PartitionShuffle
	PartitionBroadcast
	// PartitionGlobal: `.global_()`, everything to subtask 0.
	PartitionGlobal
	// PartitionHash: by key group of the key columns (key_by).
	PartitionHash
)

var partitioningNames = [...]string{
	PartitionUnset:     "FORWARD_IMPLICIT",
	PartitionForward:   "FORWARD",
	PartitionRebalance: "REBALANCE",
	PartitionRescale:   "RESCALE",
	PartitionShuffle:   "SHUFFLE",
	PartitionBroadcast: "BROADCAST",
	PartitionGlobal:    "GLOBAL",
	PartitionHash:      "HASH",
}

// Known reports whether p is one of the partitionings.
func (p Partitioning) Known() bool { return p >= 0 && int(p) < len(partitioningNames) }

// String is the partitioning's name in the wire form, e.g. "HASH" (the
// REST API maps it to Flink's ship strategies).
func (p Partitioning) String() string {
	if p.Known() {
		return partitioningNames[p]
	}
	return fmt.Sprintf("Partitioning(%d)", int(p))
}

// Source reads rows into the job.
type Source struct {
	// Config is the connector's configuration in the wire form, decoded by
	// the connector (issue 24 item 2).
	Config *planpb.Source
}

// Sink writes the rows of its input out of the job.
type Sink struct {
	// Config is the connector's configuration in the wire form, decoded by
	// the connector (issue 24 item 2).
	Config *planpb.Sink
}

// Select computes its output columns, in order.
type Select struct {
	Columns []*NamedExpr
}

// Filter keeps the rows where Predicate is true.
type Filter struct {
	Predicate Expr
}

// MapBatches calls a Python function with a pandas DataFrame per batch and
// takes the DataFrame it returns (any number of rows).
type MapBatches struct {
	// Function is declared like a UDF whose return schema is the whole
	// output schema.
	Function *workerpb.UdfSpec
	// HandlesRowKinds: over a changelog stream the function receives the
	// hidden _row_kind column last and returns it last; without it,
	// map_batches over a changelog stream is refused.
	HandlesRowKinds bool
}

// Emit is when a keyed aggregation emits its results.
type Emit int

// The emit modes. The values are the wire form's.
const (
	// EmitAuto: EmitUpdates when a source upstream is unbounded, else
	// EmitFinal.
	EmitAuto Emit = iota
	// EmitFinal: one row per key when the input ends.
	EmitFinal
	// EmitUpdates: the keys that changed, every
	// pipeline.keyed-aggregate.update-interval and at the end, as a
	// changelog.
	EmitUpdates
)

// KeyedAggregate aggregates the rows of each key.
type KeyedAggregate struct {
	Keys       []string
	Aggregates []*Aggregate
	Emit       Emit
	// StateTTLMs is the processing-time TTL of a key's state in
	// milliseconds; 0 takes the job's table.exec.state.ttl.
	StateTTLMs int64
}

// Aggregate is one aggregate of a keyed or window aggregation.
type Aggregate struct {
	// Function is sum, count, min, max, mean; in a window also first,
	// last and count_distinct; UDAFFunction for a pandas UDAF.
	Function string
	// Column is the input column, empty for count(*).
	Column string
	// Name is the output column.
	Name string
	// UDF is the pandas UDAF of Function UDAFFunction, nil otherwise.
	UDF *workerpb.UdfSpec
	// Args are the UDAF's argument columns.
	Args []string
}

// DropDuplicates keeps the first row of each combination of Subset's
// values.
type DropDuplicates struct {
	Subset []string
}

// Limit passes on the first N rows that reach it.
type Limit struct {
	N int64
}

// WatermarkAssigner makes the event-time watermarks of its output
// (with_watermark): Flink's bounded out-of-orderness on TimeColumn.
type WatermarkAssigner struct {
	TimeColumn          string
	MaxOutOfOrdernessMs int64
	// IdleTimeoutMs marks the output idle after that long without rows;
	// 0: never.
	IdleTimeoutMs int64
	// TimeExtractor, when the event time is an expression, is the select
	// computing TimeColumn (every input column, then TimeColumn); nil
	// otherwise.
	TimeExtractor *Select
}

// WindowKind is a window aggregation's kind of window.
type WindowKind int

// The window kinds. The values are the wire form's; 0 is none (the
// validation refuses it).
const (
	Tumble   WindowKind = iota + 1 // size, offset
	Hop                            // size, slide, offset
	Cumulate                       // step, size, offset
	Session                        // gap
)

// LateRows is what happens to a row behind the watermark.
type LateRows int

// The late-rows policies. The values are the wire form's.
const (
	// DropLateRows drops (and counts) them.
	DropLateRows LateRows = iota
	// KeepLateRows sends them, unchanged, to the node's late-rows output.
	KeepLateRows
)

// WindowAggregate aggregates the rows of each event-time window, per key
// or over all rows (no keys).
type WindowAggregate struct {
	TimeColumn string
	Kind       WindowKind
	// Durations in milliseconds.
	SizeMs, SlideMs, StepMs, GapMs, OffsetMs int64
	Keys                                     []string
	Aggregates                               []*Aggregate
	AllowedLatenessMs                        int64
	LateRows                                 LateRows
}

// JoinType is which rows of a join's sides without a match are emitted
// (padded with nulls).
type JoinType int

// The join types. The values are the wire form's.
const (
	InnerJoin JoinType = iota
	LeftJoin
	RightJoin
	FullJoin
)

var joinTypeNames = [...]string{InnerJoin: "INNER", LeftJoin: "LEFT", RightJoin: "RIGHT", FullJoin: "FULL"}

// Known reports whether t is one of the join types.
func (t JoinType) Known() bool { return t >= 0 && int(t) < len(joinTypeNames) }

func (t JoinType) String() string {
	if t.Known() {
		return joinTypeNames[t]
	}
	return fmt.Sprintf("JoinType(%d)", int(t))
}

// OuterLeft reports whether unmatched left rows are emitted.
func (t JoinType) OuterLeft() bool { return t == LeftJoin || t == FullJoin }

// OuterRight reports whether unmatched right rows are emitted.
func (t JoinType) OuterRight() bool { return t == RightJoin || t == FullJoin }

// IntervalJoin joins two inputs (left, right) on equal keys where
// left.time + lower <= right.time <= left.time + upper.
type IntervalJoin struct {
	LeftKeys, RightKeys []string
	LeftTime, RightTime string
	// Bounds in nanoseconds, lower <= upper.
	LowerNs, UpperNs int64
	How              JoinType
	LateRows         LateRows
}

// Join is a regular equi-join of two inputs kept in keyed state.
type Join struct {
	LeftKeys, RightKeys []string
	How                 JoinType
	// Suffix is added to a right column named like a left one ("_right"
	// if empty).
	Suffix string
	// NullsEqual compares keys with IS NOT DISTINCT FROM.
	NullsEqual bool
	// StateTTLMs is the processing-time TTL of the stored rows; 0 takes
	// the job's table.exec.state.ttl.
	StateTTLMs int64
	// LeftUniqueKey and RightUniqueKey are a unique key of each side
	// (empty: none known).
	LeftUniqueKey, RightUniqueKey []string
}
