package operators

import (
	"github.com/flinkgo/flinkgo/connectors/builtin"
	"github.com/flinkgo/flinkgo/runtime/connector"
	"io"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flinkgo/flinkgo/internal/beneath"
	"github.com/flinkgo/flinkgo/runtime/operator"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/udf/bridge"
	"github.com/flinkgo/flinkgo/udf/bridge/pluginrunner"
)

// Options are the job-wide settings the runtime's operators are built
// with.
type Options struct {
	// Runner is the template of every Python worker's options; NewRunner
	// starts one (default pluginrunner.NewRunner).
	Runner    pluginrunner.Options
	NewRunner func(pluginrunner.Options) (bridge.Runner, error)
	// BundleSize and BundleTime: see package bundle.
	BundleSize int
	BundleTime time.Duration
	// Connectors has the connectors of sources and sinks (default
	// connectors/builtin's).
	Connectors *connector.Registry
	// SourceBatchRows is the largest batch a source reads.
	SourceBatchRows int
	// Paths opens file sources' files and file sinks' directories; nil
	// opens them as named.
	Paths beneath.Paths
	// Stdout receives print sinks' rows; Collect collect sinks' batches.
	Stdout  io.Writer
	Collect func(op *plan.Operator, subtask int, b arrow.RecordBatch) error
	// CollectBatchBytes: see connector.WriterConfig.
	CollectBatchBytes int
	// KeyedCacheGroups is how many groups a keyed aggregation subtask
	// keeps in memory after a checkpoint wrote them to its state backend.
	KeyedCacheGroups int
	// UpdateInterval is how often a keyed aggregation in updates mode
	// emits the keys that changed.
	UpdateInterval time.Duration
	// StateTTL is table.exec.state.ttl: the processing-time TTL of the
	// state of joins and keyed aggregations that set none (0: forever).
	StateTTL time.Duration
	// WatermarkInterval is how often a watermark assigner sends its
	// watermark (pipeline.auto-watermark-interval); 0 for the default.
	WatermarkInterval time.Duration
}

// Registry returns the runtime's operators, built with opts: one line per
// operator kind.
func Registry(opts Options) *operator.Registry {
	if opts.Connectors == nil {
		opts.Connectors = builtin.Registry()
	}
	if opts.NewRunner == nil {
		opts.NewRunner = func(o pluginrunner.Options) (bridge.Runner, error) { return pluginrunner.NewRunner(o) }
	}
	r, err := operator.NewRegistry(
		sourceKind(opts),
		selectKind,
		filterKind,
		unionKind,
		udfKind(opts),
		mapBatchesKind(opts),
		keyedAggregateKind(opts),
		dropDuplicatesKind(opts),
		limitKind(),
		watermarkAssignerKind(opts),
		intervalJoinKind(opts),
		joinKind(opts),
		windowAggregateKind(opts),
		sinkKind(opts),
	)
	if err != nil {
		panic(err) // the table above is wrong: a bug, caught by every test
	}
	return r
}
