package plan

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flinkgo/flinkgo/internal/keygroup"
	"github.com/flinkgo/flinkgo/runtime/config"
	"github.com/flinkgo/flinkgo/runtime/connector"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
)

// Plan config keys the planner reads (JobPlan.config).
const (
	ConfigForwardMismatch = "pipeline.forward-mismatch"
	ConfigMaxParallelism  = "pipeline.max-parallelism"
	ConfigBatchSize       = "python.fn-execution.arrow.batch.size"
	// ConfigPruneColumns ("true" by default) removes the columns no
	// operator downstream reads from the selects and UDF operators that
	// output them, so that they cross no exchange; "false" keeps them.
	ConfigPruneColumns = "pipeline.prune-unread-columns"
)

// Values of the forward-mismatch policy (docs/semantics.md#forward-mismatch).
const (
	ForwardMismatchRebalance = "rebalance"
	ForwardMismatchRescale   = "rescale"
	ForwardMismatchFail      = "fail"
)

var forwardMismatchValues = []string{ForwardMismatchRebalance, ForwardMismatchRescale, ForwardMismatchFail}

// Limits on what a plan may ask the runtime to allocate. A plan comes from a
// client; these bound the goroutines, processes and buffers one plan can make
// a server create, far above what a job on one machine uses
// (docs/semantics.md#limits).
const (
	// ParallelismLimit bounds a node's parallelism, the plan's default
	// parallelism and a UDF's concurrency (each subtask is a goroutine and,
	// for a UDF, a Python process).
	ParallelismLimit = 1024
	// SubtasksLimit bounds the subtasks of all the operators of a job.
	SubtasksLimit = 16384
	// BatchSizeLimit bounds the rows of a batch a plan asks for
	// (python.fn-execution.arrow.batch.size, a UDF's batch_size).
	BatchSizeLimit = 1 << 22
	// StringLiteralLimit bounds a string literal in an expression, which
	// is repeated on every row of a batch.
	StringLiteralLimit = 64 << 10
)

// DefaultBatchSize is the rows per batch sent to Python when neither a UDF
// nor the plan sets one (python.fn-execution.arrow.batch.size): the config
// registry's, the one place the default is written.
var DefaultBatchSize = config.DefaultInt(config.ConfigBatchSize)

// Options tune planning. A zero field takes its default; the caller's
// struct is never modified.
type Options struct {
	// DefaultParallelism is the parallelism of nodes that set none when the
	// plan's default_parallelism is 0. Default 1.
	DefaultParallelism int
	// CollectMustEnd refuses a collect sink whose input never ends: set it
	// where a client waits for the job's end to get the collected rows
	// (the server: to_pandas, collect). A program that embeds the runtime
	// and cancels its jobs itself leaves it unset.
	CollectMustEnd bool
	// MaxParallelism is the number of key groups. 0 reads the plan's
	// pipeline.max-parallelism, else keygroup.DefaultMaxParallelism of the
	// largest operator parallelism.
	MaxParallelism int
	// RestoredMaxParallelism is the max parallelism of the snapshot the job
	// restores (0: none). It is the job's max parallelism unless
	// MaxParallelism or the plan sets one, and an operator above it is
	// refused with a message saying the state fixes it.
	RestoredMaxParallelism int
	// ForwardMismatch is the policy for forward edges between operators of
	// different parallelism: "rebalance", "rescale" or "fail". "" reads the
	// plan's pipeline.forward-mismatch, else "rebalance".
	ForwardMismatch string
	// Parallelism sets, by uid, the parallelism a running job rescales to
	// (package job's rescale): an operator's uid, or a node's uid for
	// every operator the node was split into. It overrides the plan's and
	// a UDF's concurrency; an unknown uid is a planning error naming the
	// known ones.
	Parallelism map[string]int
	// Schemas, when set, derives each operator's output schema (the
	// runtime's operator registry, *operator.Registry): Plan then fills
	// every Operator.Schema, Explain shows them, and an operator whose
	// schema cannot be derived is a planning error.
	Schemas SchemaDeriver
	// Connectors decodes the plan's sources and sinks with their
	// connectors (the runtime's connector registry), which say whether a
	// source ends and which changelogs a sink writes. Nil uses
	// DefaultConnectors.
	Connectors Connectors
}

// Connectors decodes sources and sinks with their connectors
// (*connector.Registry).
type Connectors interface {
	Source(wire *planpb.Source) (connector.Source, error)
	Sink(wire *planpb.Sink) (connector.Sink, error)
}

// DefaultConnectors is what plans with Options.Connectors nil are planned
// with: a program that plans without a runtime sets it once at start (to
// connectors/builtin's registry); left nil, such a plan's sources and
// sinks are planning errors naming Options.Connectors.
var DefaultConnectors Connectors

// SchemaDeriver derives an operator's output schema from its inputs'
// schemas, in plan order.
type SchemaDeriver interface {
	Schema(op *Operator, in []*arrow.Schema) (*arrow.Schema, error)
}

// settings are the options once defaulted from Options and the plan.
type settings struct {
	defaultParallelism int
	// maxParallelism is 0 until the operators' parallelism is known.
	maxParallelism  int
	maxParallelFrom string
	forwardMismatch string
	batchSize       int
	pruneColumns    bool
	// parallelism is Options.Parallelism.
	parallelism map[string]int
}

// resolve copies opts, fills its defaults from the plan and the package
// defaults, and reports every problem found.
func resolve(opts Options, job *JobPlan) (settings, []string) {
	var problems []string
	s := settings{batchSize: DefaultBatchSize, parallelism: opts.Parallelism, pruneColumns: true}
	cfg := job.Config

	switch dp := job.DefaultParallelism; {
	case dp < 0:
		problems = append(problems, fmt.Sprintf("default_parallelism is %d, must not be negative (0 means the runtime's default)", dp))
	case dp > ParallelismLimit:
		problems = append(problems, fmt.Sprintf("default_parallelism is %d, above the runtime's limit of %d (plan.ParallelismLimit)", dp, ParallelismLimit))
	case dp > 0:
		s.defaultParallelism = int(dp)
	}
	switch {
	case opts.DefaultParallelism < 0:
		problems = append(problems, fmt.Sprintf("Options.DefaultParallelism is %d, must not be negative (0 means 1)", opts.DefaultParallelism))
	case s.defaultParallelism == 0 && opts.DefaultParallelism > 0:
		s.defaultParallelism = opts.DefaultParallelism
	}
	if s.defaultParallelism == 0 {
		s.defaultParallelism = 1
	}

	switch {
	case opts.MaxParallelism < 0 || opts.MaxParallelism > keygroup.UpperBoundMaxParallelism:
		problems = append(problems, fmt.Sprintf("Options.MaxParallelism is %d, must be between 1 and %d (0 means the default)", opts.MaxParallelism, keygroup.UpperBoundMaxParallelism))
	case opts.MaxParallelism > 0:
		s.maxParallelism, s.maxParallelFrom = opts.MaxParallelism, "Options.MaxParallelism"
	case cfg[ConfigMaxParallelism] == "" && opts.RestoredMaxParallelism > 0:
		s.maxParallelism, s.maxParallelFrom = opts.RestoredMaxParallelism, restoredFrom
	default:
		if v, ok := cfg[ConfigMaxParallelism]; ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || n < 1 || n > keygroup.UpperBoundMaxParallelism {
				problems = append(problems, fmt.Sprintf("config %s=%q: must be an integer between 1 and %d", ConfigMaxParallelism, v, keygroup.UpperBoundMaxParallelism))
			} else {
				s.maxParallelism, s.maxParallelFrom = n, ConfigMaxParallelism
			}
		}
	}

	if opts.ForwardMismatch != "" {
		if v, ok := forwardMismatch(opts.ForwardMismatch); ok {
			s.forwardMismatch = v
		} else {
			problems = append(problems, fmt.Sprintf("Options.ForwardMismatch is %q, allowed: %s", opts.ForwardMismatch, strings.Join(forwardMismatchValues, ", ")))
		}
	} else if v, ok := cfg[ConfigForwardMismatch]; ok {
		if p, ok := forwardMismatch(v); ok {
			s.forwardMismatch = p
		} else {
			problems = append(problems, fmt.Sprintf("config %s=%q is unknown, allowed: %s", ConfigForwardMismatch, v, strings.Join(forwardMismatchValues, ", ")))
		}
	}
	if s.forwardMismatch == "" {
		s.forwardMismatch = ForwardMismatchRebalance
	}

	if v, ok := cfg[ConfigBatchSize]; ok {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 1 || n > BatchSizeLimit {
			problems = append(problems, fmt.Sprintf("config %s=%q: must be an integer between 1 and %d (plan.BatchSizeLimit)", ConfigBatchSize, v, BatchSizeLimit))
		} else {
			s.batchSize = n
		}
	}
	if v, ok := cfg[ConfigPruneColumns]; ok {
		prune, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			problems = append(problems, fmt.Sprintf("config %s=%q: must be true or false", ConfigPruneColumns, v))
		} else {
			s.pruneColumns = prune
		}
	}
	return s, problems
}

// restoredFrom says that the max parallelism comes from restored state.
const restoredFrom = "the state the job restores"

// forwardMismatch parses a policy name, ignoring case and surrounding space
// as Flink does for enum options.
func forwardMismatch(v string) (string, bool) {
	v = strings.ToLower(strings.TrimSpace(v))
	for _, allowed := range forwardMismatchValues {
		if v == allowed {
			return v, true
		}
	}
	return "", false
}
