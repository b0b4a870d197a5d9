package plan

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flinkgo/flinkgo/runtime/rowkind"
	"github.com/flinkgo/flinkgo/udf/bridge/proto/workerpb"
)

// Kind is what a physical operator does.
type Kind int

// The operator kinds. KindUDF exists only in the physical graph: the planner
// creates it for the Python UDF calls it takes out of a select or a filter.
const (
	KindSource Kind = iota + 1
	KindSelect
	KindFilter
	KindUDF
	KindMapBatches
	KindKeyedAggregate
	KindUnion
	KindSink
	KindDropDuplicates
	KindLimit
	KindWatermarkAssigner
	KindIntervalJoin
	KindWindowAggregate
	KindJoin
)

var kindNames = [...]string{
	KindSource:            "source",
	KindSelect:            "select",
	KindFilter:            "filter",
	KindUDF:               "udf",
	KindMapBatches:        "map_batches",
	KindKeyedAggregate:    "keyed_aggregate",
	KindUnion:             "union",
	KindSink:              "sink",
	KindDropDuplicates:    "drop_duplicates",
	KindLimit:             "limit",
	KindWatermarkAssigner: "watermark_assigner",
	KindIntervalJoin:      "interval_join",
	KindWindowAggregate:   "window_aggregate",
	KindJoin:              "join",
}

func (k Kind) String() string {
	if k > 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Where an operator's parallelism comes from (Operator.ParallelismFrom).
const (
	FromExplicit    = "explicit"         // the node's set_parallelism
	FromDefault     = "default"          // the job's default parallelism
	FromConcurrency = "udf concurrency"  // the explicit concurrency of a synchronous UDF
	FromLimit       = "limit"            // a limit counts its rows in one subtask
	FromWindowAll   = "non-keyed window" // a window without keys sees every row in one subtask (windowAll)
)

// Graph is the physical job graph: operators in topological order and the
// edges between them. It shares the model (nodes, expressions, UDF specs)
// with the JobPlan it was planned from; treat both as read-only.
type Graph struct {
	// Name is the job's name.
	Name string
	// Operators in topological order; Operators[i].ID == i.
	Operators []*Operator
	// Edges sorted by downstream operator, then by the order of its inputs.
	Edges []*Edge
	// MaxParallelism is the number of key groups of every keyed exchange and
	// keyed state (docs/semantics.md#key-groups).
	MaxParallelism int
	// MaxParallelismFrom says why MaxParallelism has its value: the option or
	// configuration key that set it, the restored state, or the default rule
	// applied to the highest operator parallelism.
	MaxParallelismFrom string
	// DefaultParallelism is the parallelism of nodes that set none.
	DefaultParallelism int
	// ForwardMismatch is the policy applied to forward edges between
	// operators of different parallelism: "rebalance" or "rescale" (a graph
	// is never planned under "fail" when such an edge exists).
	ForwardMismatch string
	// Changes lists, in edge order, every forward edge the policy changed.
	Changes []Change
	// Config is the plan's configuration, for the runtime's options
	// (checkpointing, restarts). Read-only.
	Config map[string]string
}

// Operator is one physical operator; it runs as Parallelism subtasks.
type Operator struct {
	// ID is the operator's index in Graph.Operators.
	ID int
	// UID is stable across changes elsewhere in the graph: state and
	// savepoints are matched to operators by it (docs/semantics.md#uids).
	UID string
	// Name is for explanations, logs and errors. UDF operators are named
	// after their UDFs, joined by "+".
	Name string
	Kind Kind
	// Role is empty for the operator that is a logical node itself. For an
	// operator the planner added to split a node, it is what the operator
	// does for that node, and its uid and name are the node's plus "/"+Role
	// (except UDF operators, named after their UDFs): "pre", "pre-<k>"
	// (materializes the arguments of udf-<k>), "udf-<k>", "post" (the
	// select's final columns), "filter" and "drop" (removes the temporary
	// columns after a filter), and for with_watermark "extract-timestamp"
	// (the select computing the event-time column from an expression; a
	// UDF there keeps its "udf-<k>" role but takes this uid when it is the
	// only operator) and "watermarks" (the watermark assigner).
	Role string
	// NodeID is the id of the logical node the operator comes from.
	NodeID int
	// Parallelism is the number of subtasks, at least 1.
	Parallelism int
	// ParallelismFrom says where Parallelism comes from: FromExplicit,
	// FromDefault or FromConcurrency.
	ParallelismFrom string
	// ChainID is shared by operators chained together (run in one task,
	// handing batches over by function call). Chains are numbered from 0 in
	// the order of their first operator.
	ChainID int
	// Node says what a non-UDF operator computes. For an operator that maps
	// one logical node it is the user's node itself (its Inputs name logical
	// nodes: use the Graph's edges instead). For a select or filter the
	// planner added around UDF calls it is a new node holding only the
	// select's columns or the filter's predicate. Nil for UDF operators.
	Node *Node
	// UDF is the fused chain of a UDF operator; nil for other kinds.
	UDF *UDFChain
	// KeepInput is set on the selects and UDF operators the planner adds for
	// a filter whose predicate calls UDFs: the operator's output starts with
	// every column of its input, in input order, except DropColumns, and the
	// columns it computes (Node's select columns, or UDF.OutputColumns)
	// follow. Without it a select's output is exactly its columns, and a UDF
	// operator's output is exactly UDF.OutputColumns.
	KeepInput   bool
	DropColumns []string
	// Pruned are the columns the planner removed from a select's columns
	// or a UDF operator's pass-through columns because no operator
	// downstream reads them (ConfigPruneColumns), in their former order.
	Pruned []string
	// Concurrency are the concurrency=(min, max) bounds the UDFs of a UDF
	// or map_batches operator declare (zero when none): the autoscaler
	// (package autoscaler) sets the operator's parallelism within them.
	Concurrency Bounds
	// BatchSize is the number of rows per Arrow batch sent to Python, for udf
	// and map_batches operators (0 for the other kinds): the smallest
	// explicit batch_size of the UDFs, else the plan's
	// python.fn-execution.arrow.batch.size, else DefaultBatchSize. The
	// bundle package caps it at the bundle size when it runs.
	BatchSize int
	// Bounded reports whether the operator's input ends: a source's says
	// so itself (package source), any other operator's ends when every
	// source upstream of it is bounded.
	Bounded bool
	// Ends lists, for a limit, the sources it ends once its n rows have
	// passed (upstream of it, with no path to a sink that skips a limit);
	// EndAfter is, for a source, how many limits must have ended it before
	// it stops reading (0: none, it reads to its own end).
	Ends     []int
	EndAfter int
	// EmitUpdates is a keyed aggregation's emit mode, resolved: true when
	// it emits the groups that changed every update interval (UPDATES, or
	// AUTO over an input that never ends), false when it emits every group
	// once at the end of its input (FINAL, or AUTO over a bounded input).
	EmitUpdates bool
	// Changelog is the kind of the operator's output stream: append-only,
	// upsert by UpsertKey, or retract (docs/semantics.md#changelogs). The
	// batches of a changelog stream end with the rowkind.Column.
	// ChangelogFrom is the id of the operator that made the stream a
	// changelog (-1 for append-only streams).
	Changelog     rowkind.Mode
	UpsertKey     []string
	ChangelogFrom int
	// DropUpdateBefore is set on a file sink writing changelogs whose input
	// is the retract stream of an updating keyed aggregation that other
	// operators read too: the sink drops the -U rows, which makes the
	// stream an upsert stream by the aggregation's keys (Changelog,
	// UpsertKey), as Flink's upsert sinks drop UPDATE_BEFORE.
	DropUpdateBefore bool
	// Schema is the operator's output schema when the graph was planned
	// with Options.Schemas, else nil.
	Schema *arrow.Schema
	// OutputSchema is the Arrow IPC schema the client computed for the
	// logical node, set on the operator that produces the node's output and
	// nil on the operators the planner added before it. The planner never
	// decodes it.
	OutputSchema []byte
}

// Bounds are a UDF's concurrency=(min, max): the least and the most
// parallelism the autoscaler gives its operator.
type Bounds struct{ Min, Max int }

// Zero reports whether no bounds are declared.
func (b Bounds) Zero() bool { return b == Bounds{} }

// specBounds are the bounds a UDF declares.
func specBounds(spec *workerpb.UdfSpec) Bounds {
	return Bounds{Min: int(spec.GetConcurrencyMin()), Max: int(spec.GetConcurrencyMax())}
}

// UDFChain is the work of one UDF operator: one worker call per batch that
// applies Calls in order.
type UDFChain struct {
	// Calls in dependency order; a call's arguments are InputColumns or
	// outputs of earlier calls. Each UdfSpec is the client's, untouched.
	Calls []*workerpb.UdfCall
	// InputColumns are the columns of the operator's input that the worker
	// reads (its input schema), in order of first use.
	InputColumns []string
	// ResultColumns are the call outputs the worker returns (its output
	// schema), in the order they appear in OutputColumns.
	ResultColumns []string
	// OutputColumns is the operator's output, in order: each name is either
	// a column of its input, passed through unchanged, or one of
	// ResultColumns. With Operator.KeepInput they follow the kept input
	// columns and are all ResultColumns.
	OutputColumns []string
	// Concurrency is the explicit concurrency of the chain's synchronous
	// UDFs (the operator's parallelism), 0 when none sets it.
	Concurrency int
	// Async is set when a call is an async UDF (its concurrency is the number
	// of calls in flight inside each worker).
	Async bool
}

// Edge connects two operators.
type Edge struct {
	// From and To are operator IDs.
	From, To int
	// Partitioning is never PartitionUnset: an edge nobody asked anything
	// of is PartitionForward with Explicit false.
	Partitioning Partitioning
	// Keys are the key columns of a HASH edge.
	Keys []string
	// Explicit is set when the plan asked for this partitioning (the
	// partitioning may since have been changed by the forward-mismatch
	// policy; see ChangedBy).
	Explicit bool
	// ChangedBy is empty, or the setting that changed the edge's
	// partitioning, e.g. "pipeline.forward-mismatch=rebalance".
	ChangedBy string
	// FromOutput is which output of From the edge carries: MainOutput, or
	// the late rows of one of From's inputs (LateRowsOutput + the input's
	// index, with that input's schema: see EdgeSchema).
	FromOutput int
}

// The outputs of an operator an edge can read (Edge.FromOutput).
const (
	MainOutput = iota
	// LateRowsOutput carries, unchanged, the rows of the operator's first
	// input that a node with late_rows=KEEP found late: a window's rows too
	// late for every window (Flink's sideOutputLateData), an interval
	// join's left rows behind the watermark (sideOutputLeftLateData).
	LateRowsOutput
	// LateRowsRightOutput carries an interval join's right rows behind the
	// watermark (sideOutputRightLateData).
	LateRowsRightOutput
)

// LateRowsInput is the input whose late rows output `output` carries, -1
// for the main output.
func LateRowsInput(output int) int { return output - LateRowsOutput }

// EdgeSchema is the schema of the rows on edge e, given every operator's
// output schema: its From's, or for late rows the schema of the rows of
// the input of From they came from.
func (g *Graph) EdgeSchema(e *Edge, out []*arrow.Schema) *arrow.Schema {
	for e.FromOutput != MainOutput {
		in := g.Inputs(e.From)
		i := LateRowsInput(e.FromOutput)
		if i < 0 || i >= len(in) {
			return nil // the planner refuses such an edge
		}
		e = in[i]
	}
	return out[e.From]
}

// Change records one edge the forward-mismatch policy changed.
type Change struct {
	// Edge is the index in Graph.Edges.
	Edge     int
	From, To Partitioning
	// Reason, e.g. `forward edge from "filter" (p=2) to udf "score" (p=4):
	// parallelism differs; pipeline.forward-mismatch=rebalance`.
	Reason string
}

// Inputs returns the edges into operator id, in input order.
func (g *Graph) Inputs(id int) []*Edge {
	var in []*Edge
	for _, e := range g.Edges {
		if e.To == id {
			in = append(in, e)
		}
	}
	return in
}

// Outputs returns the edges out of operator id, in the order of their
// downstream operators.
func (g *Graph) Outputs(id int) []*Edge {
	var out []*Edge
	for _, e := range g.Edges {
		if e.From == id {
			out = append(out, e)
		}
	}
	return out
}
