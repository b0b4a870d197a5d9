package pluginrunner

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/internal/logging"
	"github.com/flinkgo/flinkgo/udf/bridge/proto/workerpb"
)

// PythonEnv names the environment variable that picks the interpreter when
// Options.Python is empty.
const PythonEnv = "FLINKGO_PYTHON"

// Options configure one Runner. NewRunner copies them, fills defaults and
// validates them; the caller's struct is never modified.
type Options struct {
	// Calls is the fused chain, applied in order. Required.
	Calls []*workerpb.UdfCall
	// InputSchema is the schema of every batch given to Process. Required.
	InputSchema *arrow.Schema
	// OutputSchema is the schema of every result: a subset of the call
	// outputs. Default: one column per call, named by its output, typed by
	// its UDF's return type.
	OutputSchema *arrow.Schema

	// Python is the interpreter. Default: $FLINKGO_PYTHON, else "python3".
	Python string
	// Env holds extra "KEY=value" entries for the worker's environment.
	Env []string

	// StartTimeout bounds the worker start and handshake. Default 60 s
	// (importing pyarrow and pandas on a cold disk can take seconds).
	StartTimeout time.Duration
	// CancelGrace is how long Cancel lets the worker exit on SIGTERM before
	// it sends SIGKILL. Default 200 ms.
	CancelGrace time.Duration
	// CloseTimeout bounds an orderly Close; past it Close cancels. Default 60 s.
	CloseTimeout time.Duration
	// AsyncTimeout bounds one call of an async UDF. Default 3 min, as Flink's
	// table.exec.async-scalar.timeout.
	AsyncTimeout time.Duration

	// MaxMessageBytes is the gRPC message limit on both sides. Default 64 MiB.
	// Callers must cut batches below MaxBatchBytes().
	MaxMessageBytes int
	// MaxInFlight is how many batches may await their result at once.
	// Default 4.
	MaxInFlight int
	// Transport carries the batches. Default TransportSharedMemory on
	// Linux, else TransportUnixSocket.
	Transport Transport
	// SharedSlotBytes is the size of one slot of TransportSharedMemory; a
	// batch or result of more bytes travels inline on the socket. Default
	// DefaultSharedSlotBytes. Host and worker map 2*MaxInFlight slots;
	// the pages cost memory once written (the largest payload each slot
	// carried), and go with the runner.
	SharedSlotBytes int64

	// OperatorName and Subtask tag logs and errors.
	OperatorName string
	Subtask      int
	// Logger receives the runner's and the worker's logs (go-plugin's
	// through an hclog adapter), tagged with the UDF, operator, subtask
	// and worker pid. Nil discards them.
	Logger *slog.Logger
	// Allocator holds the result batches. Default memory.DefaultAllocator.
	Allocator memory.Allocator
	// Metrics receives the runner's counts (batches and rows sent, the
	// worker's time per batch, batches in flight, the worker's pid for
	// its memory, workers opened); they outlive the runner, for the
	// operator subtask's next attempt (runtime/metrics.UDF is the
	// runtime's). Default: counts nobody reads.
	Metrics Metrics

	// Pool, when set, lends Open an idle worker of the same environment
	// (Python, Env, MaxMessageBytes) instead of starting one, and takes the
	// worker back when Close ends in order, for IdleTimeout, with at most
	// MaxIdle workers idle. Nil, or IdleTimeout or MaxIdle 0: every runner
	// starts and stops its own worker.
	Pool        *Pool
	IdleTimeout time.Duration
	MaxIdle     int

	// UDFOutput, when set, receives each line that user code in the worker
	// prints (stdout and stderr), prefixed with the UDF and the subtask
	// counted from 1 ("[parse_ts #1] hello"): the user's terminal, for a
	// runtime embedded in the user's program. Nil logs the lines at info
	// instead (a server). Lines printed after the runtime began to kill
	// the worker (cancel, the runtime's shutdown) are logged at debug
	// either way.
	UDFOutput io.Writer
}

// udfNames names the chain as logs and printed lines do: "a+b".
func (o Options) udfNames() string {
	names := make([]string, len(o.Calls))
	for i, c := range o.Calls {
		names[i] = c.GetUdf().GetName()
	}
	return strings.Join(names, "+")
}

// MaxBatchBytes is the largest Arrow IPC payload a caller should send: the
// message limit less room for framing and metadata.
func (o Options) MaxBatchBytes() int64 {
	return int64(o.withDefaults().MaxMessageBytes) * 9 / 10
}

func (o Options) withDefaults() Options {
	if o.Python == "" {
		o.Python = os.Getenv(PythonEnv)
	}
	if o.Python == "" {
		o.Python = "python3"
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = 60 * time.Second
	}
	if o.CancelGrace == 0 {
		o.CancelGrace = 200 * time.Millisecond
	}
	if o.CloseTimeout == 0 {
		o.CloseTimeout = 60 * time.Second
	}
	if o.AsyncTimeout == 0 {
		o.AsyncTimeout = 3 * time.Minute
	}
	if o.MaxMessageBytes == 0 {
		o.MaxMessageBytes = 64 << 20
	}
	if o.MaxInFlight == 0 {
		o.MaxInFlight = 4
	}
	if o.Transport == TransportDefault {
		o.Transport = TransportUnixSocket
		if sharedMemorySupported {
			o.Transport = TransportSharedMemory
		}
	}
	if o.SharedSlotBytes == 0 {
		o.SharedSlotBytes = DefaultSharedSlotBytes
	}
	o.Logger = logging.OrDiscard(o.Logger)
	if o.Allocator == nil {
		o.Allocator = memory.DefaultAllocator
	}
	if o.Metrics == nil {
		o.Metrics = discardMetrics{}
	}
	o.Calls = append([]*workerpb.UdfCall(nil), o.Calls...)
	o.Env = append([]string(nil), o.Env...)
	return o
}

func (o Options) validate() error {
	var errs []error
	if len(o.Calls) == 0 {
		//lint:ignore ST1005 the message starts with the name of the field or method at fault
		errs = append(errs, errors.New("Calls is empty: a runner needs at least one UDF"))
	}
	for i, c := range o.Calls {
		if c.GetUdf() == nil || len(c.GetUdf().GetPayload()) == 0 {
			//lint:ignore ST1005 the message starts with the name of the field or method at fault
			errs = append(errs, fmt.Errorf("Calls[%d] has no pickled UDF", i))
		}
		if c.GetOutput() == "" && c.GetUdf().GetFuncType() != workerpb.FuncType_FUNC_TYPE_PANDAS_BATCH {
			//lint:ignore ST1005 the message starts with the name of the field or method at fault
			errs = append(errs, fmt.Errorf("Calls[%d] (udf %q) has no output column name", i, c.GetUdf().GetName()))
		}
	}
	if o.InputSchema == nil {
		errs = append(errs, errors.New("InputSchema is nil"))
	}
	for name, d := range map[string]time.Duration{
		"StartTimeout": o.StartTimeout, "CancelGrace": o.CancelGrace,
		"CloseTimeout": o.CloseTimeout, "AsyncTimeout": o.AsyncTimeout,
	} {
		if d < 0 {
			errs = append(errs, fmt.Errorf("%s is negative (%s)", name, d))
		}
	}
	if o.MaxMessageBytes < 1<<20 {
		errs = append(errs, fmt.Errorf("MaxMessageBytes is %d; it must be at least 1 MiB", o.MaxMessageBytes))
	}
	switch o.Transport {
	case TransportUnixSocket, TransportGRPCStream:
	case TransportSharedMemory:
		if !sharedMemorySupported {
			errs = append(errs, errNoSharedMemory)
		}
		if o.SharedSlotBytes < 64<<10 {
			errs = append(errs, fmt.Errorf("SharedSlotBytes is %d; it must be at least 64 KiB", o.SharedSlotBytes))
		}
	default:
		errs = append(errs, fmt.Errorf("Transport is %s; want TransportUnixSocket, TransportSharedMemory or TransportGRPCStream", o.Transport))
	}
	if o.IdleTimeout < 0 || o.MaxIdle < 0 {
		errs = append(errs, fmt.Errorf("IdleTimeout (%s) and MaxIdle (%d) must not be negative", o.IdleTimeout, o.MaxIdle))
	}
	if o.MaxInFlight < 1 {
		errs = append(errs, fmt.Errorf("MaxInFlight is %d; it must be at least 1", o.MaxInFlight))
	}
	if len(errs) > 0 {
		return fmt.Errorf("pluginrunner: invalid options: %w", errors.Join(errs...))
	}
	return nil
}
