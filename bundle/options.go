package bundle

import (
	"fmt"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/runtime/config"
)

// Defaults of the options PyFlink names python.fn-execution.arrow.batch.size,
// .bundle.size and .bundle.time: the config registry's (runtime/config),
// the one place they are written, and which says why they are not
// PyFlink's. DefaultBatchSize is the one default batch size: the planner
// (runtime/plan) gives it to every UDF operator whose UDFs and plan set
// none.
var (
	DefaultBatchSize  = config.DefaultInt(config.ConfigBatchSize)
	DefaultBundleSize = config.DefaultInt(config.ConfigBundleSize)
	DefaultBundleTime = config.DefaultDuration(config.ConfigBundleTime)
)

// DefaultMaxBatchBytes leaves a tenth of grpcio's 16 MiB message limit, as
// configured on both sides, for framing.
const DefaultMaxBatchBytes = 16 << 20 * 9 / 10

// Options configure an Operator. A zero field takes its default; a negative
// one is an error.
type Options struct {
	// Name names the operator in errors, e.g. `udf "score" (operator 3,
	// subtask 1)`. Required.
	Name string
	// BatchSize is the number of rows per batch sent to the runner. The
	// effective size is min(BatchSize, BundleSize). Default
	// DefaultBatchSize.
	BatchSize int
	// BundleSize is the number of rows after which a bundle finishes.
	// Default DefaultBundleSize.
	BundleSize int
	// BundleTime is how long after its first row a bundle finishes.
	// Default DefaultBundleTime.
	BundleTime time.Duration
	// MaxBatchBytes caps the estimated size of one batch. Default
	// DefaultMaxBatchBytes.
	MaxBatchBytes int64
	// Allocator builds batches that join small pieces. Default
	// memory.DefaultAllocator.
	Allocator memory.Allocator
	// Executor runs the flushes. The operator owns it and shuts it down.
	// Default: a new FlushExecutor.
	Executor Executor
	// Now reads the clock for the time trigger. Default time.Now.
	Now func() time.Time
}

// withDefaults returns a copy of o with every zero field set to its default;
// o itself is not modified.
func (o Options) withDefaults() Options {
	if o.BatchSize == 0 {
		o.BatchSize = DefaultBatchSize
	}
	if o.BundleSize == 0 {
		o.BundleSize = DefaultBundleSize
	}
	if o.BundleTime == 0 {
		o.BundleTime = DefaultBundleTime
	}
	if o.MaxBatchBytes == 0 {
		o.MaxBatchBytes = DefaultMaxBatchBytes
	}
	if o.Allocator == nil {
		o.Allocator = memory.DefaultAllocator
	}
	if o.Executor == nil {
		o.Executor = NewFlushExecutor()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// validate reports every problem of o in one error.
func (o Options) validate() error {
	var problems []string
	if o.Name == "" {
		problems = append(problems, "Name is empty")
	}
	if o.BatchSize <= 0 {
		problems = append(problems, fmt.Sprintf("BatchSize is %d, must be positive", o.BatchSize))
	}
	if o.BundleSize <= 0 {
		problems = append(problems, fmt.Sprintf("BundleSize is %d, must be positive", o.BundleSize))
	}
	if o.BundleTime <= 0 {
		problems = append(problems, fmt.Sprintf("BundleTime is %v, must be positive", o.BundleTime))
	}
	if o.MaxBatchBytes <= 0 {
		problems = append(problems, fmt.Sprintf("MaxBatchBytes is %d, must be positive", o.MaxBatchBytes))
	}
	if len(problems) == 0 {
		return nil
	}
	name := o.Name
	if name == "" {
		name = "(unnamed)"
	}
	return fmt.Errorf("bundle: invalid options for operator %s: %s", name, strings.Join(problems, "; "))
}

// batchRows is the effective batch size: a batch never spans two bundles.
func (o Options) batchRows() int { return min(o.BatchSize, o.BundleSize) }
