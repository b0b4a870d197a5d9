package goworker

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flinkgo/flinkgo/internal/arrowipc"
	"github.com/flinkgo/flinkgo/udf/bridge/proto/workerpb"
)

// Env, set in a process's environment, makes Main serve as the worker. Its
// value is a Start.
const Env = "FLINKGO_GO_WORKER"

// Start says how the worker process begins.
type Start string

const (
	// Serve completes the handshake and serves until shut down.
	Serve Start = "serve"
	// ExitAtStart writes StartExitLine to stderr and exits with status 3
	// before the handshake, as a worker whose imports fail.
	ExitAtStart Start = "exit-at-start"
	// PrintAtStart prints StrayStdoutLine to stdout before the handshake,
	// as a sitecustomize.py that prints would.
	PrintAtStart Start = "print-at-start"
	// HangAtStart never completes the handshake.
	HangAtStart Start = "hang-at-start"
)

// StrayStdoutLine is what PrintAtStart prints to stdout.
const StrayStdoutLine = "hello from sitecustomize"

// StartExitLine is what ExitAtStart writes to stderr.
const StartExitLine = "goworker: told to exit before the handshake"

// Main serves the worker and exits when this process was started as one
// (Env is set); otherwise it returns at once. Call it first in TestMain,
// before anything else looks at the environment or the flags: the runner
// starts the binary as `<binary> -m flinkgo.worker`.
func Main() {
	start, ok := os.LookupEnv(Env)
	if !ok {
		return
	}
	os.Exit(serve(Start(start)))
}

// Command returns what a runner needs to start this test binary as the Go
// worker: the path to give as its Python interpreter and the extra
// environment entry (pluginrunner.Options.Python and .Env).
func Command(start Start) (path string, env []string) {
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	// A race-enabled binary sleeps a second before it exits, to let reports
	// flush; a worker that exits on every Close need not.
	race := strings.TrimSpace(os.Getenv("GORACE") + " atexit_sleep_ms=0")
	return exe, []string{Env + "=" + string(start), "GORACE=" + race}
}

// Func names what a Go worker UDF does. It travels as the spec's payload.
type Func string

const (
	// Identity returns its first argument.
	Identity Func = "identity"
	// AddOne returns x+1 for an int64 or float64 column.
	AddOne Func = "add_one"
	// Affine returns 2x+1 for an int64 or float64 column.
	Affine Func = "affine"
	// Upper upper-cases a string column; nulls stay null.
	Upper Func = "upper"
	// Hang never answers: the batch blocks the worker until it is killed.
	Hang Func = "hang"
	// SpawnChild starts "sleep 20" sharing the worker's stdout and stderr,
	// as a UDF that starts a subprocess would, then blocks like Hang.
	SpawnChild Func = "spawn_child"
	// KillSelf SIGKILLs the worker on its first batch, as the OOM killer would.
	KillSelf Func = "kill_self"
	// ShortResult answers with the first row of its argument only.
	ShortResult Func = "short_result"
	// WrongType answers with a string column whatever it declares.
	WrongType Func = "wrong_type"
	// WrongSeq answers a batch under the next batch's sequence number.
	WrongSeq Func = "wrong_seq"
	// BadArrow answers with bytes that are not Arrow IPC.
	BadArrow Func = "bad_arrow"
	// CraftedArrow answers with a well-formed IPC stream of a string
	// column whose offsets go backwards (declare it string): reading its
	// second row would slice [6:3].
	CraftedArrow Func = "crafted_arrow"
	// Chatty returns its argument; for each batch it prints
	// "printed by the udf <first value>" to stdout (go-plugin's stdio
	// stream) and writes ChattyStderrLine to stderr.
	Chatty Func = "chatty"
	// FailOpen makes Open report a UDF error.
	FailOpen Func = "fail_open"
	// FailClose makes Close report a teardown error.
	FailClose Func = "fail_close"
	// NoDataSocket returns its argument but opens no data socket when the
	// host asks for one.
	NoDataSocket Func = "no_data_socket"
	// Repeat is a map_batches function: every row of the batch twice.
	Repeat Func = "repeat"
	// Flood prints one line of FloodBytes bytes to stdout (go-plugin's
	// stdio stream) and returns its argument.
	Flood Func = "flood"
	// FloodCrash writes FloodBytes bytes without a newline to stderr and
	// exits with status 3.
	FloodCrash Func = "flood_crash"
)

// FloodBytes is how much Flood and FloodCrash write.
const FloodBytes = 8 << 20

// ChattyStderrLine is what Chatty writes to stderr.
const ChattyStderrLine = "written to stderr by the udf"

// ErrorType is the exception type of the UDF errors the worker reports.
const ErrorType = "GoWorkerError"

// FailOn raises a UDF error (ErrorType, "value <v> is not allowed") on the
// batch holding v in its int64 argument, and returns the argument otherwise.
func FailOn(v int64) Func { return Func("fail_on " + strconv.FormatInt(v, 10)) }

// CrashOn writes "goworker: crashing on value <v>" to stderr and exits with
// status 3 on the batch holding v; it returns its argument otherwise.
func CrashOn(v int64) Func { return Func("crash_on " + strconv.FormatInt(v, 10)) }

// payloadPrefix marks a Go worker payload, so that the Python worker (which
// would try to unpickle it) and this one tell their specs apart.
const payloadPrefix = "goworker/v1 "

// UDF returns the spec of a scalar UDF named name that does fn and declares
// returnType. Use it with a call's args and output as for a Python UDF.
func UDF(name string, fn Func, returnType arrow.DataType) *workerpb.UdfSpec {
	ret, err := arrowipc.EncodeSchema(arrow.NewSchema([]arrow.Field{{Name: name, Type: returnType, Nullable: true}}, nil))
	if err != nil {
		panic(fmt.Sprintf("goworker: return type %s: %v", returnType, err))
	}
	return &workerpb.UdfSpec{
		Name:         name,
		Payload:      []byte(payloadPrefix + string(fn)),
		FuncType:     workerpb.FuncType_FUNC_TYPE_ARROW,
		ReturnSchema: ret,
	}
}

// MapBatches returns the spec of a map_batches function named name that
// does fn (Repeat) and returns batches of schema.
func MapBatches(name string, fn Func, schema *arrow.Schema) *workerpb.UdfSpec {
	ret, err := arrowipc.EncodeSchema(schema)
	if err != nil {
		panic(fmt.Sprintf("goworker: schema %s: %v", schema, err))
	}
	return &workerpb.UdfSpec{
		Name:         name,
		Payload:      []byte(payloadPrefix + string(fn)),
		FuncType:     workerpb.FuncType_FUNC_TYPE_PANDAS_BATCH,
		ReturnSchema: ret,
	}
}

// parseFunc reads a payload written by UDF or MapBatches.
func parseFunc(payload []byte) (op string, arg int64, err error) {
	text, ok := strings.CutPrefix(string(payload), payloadPrefix)
	if !ok {
		return "", 0, fmt.Errorf("payload is not a Go worker function (a pickled Python UDF given to the Go worker?)")
	}
	op, argText, hasArg := strings.Cut(text, " ")
	if hasArg {
		if arg, err = strconv.ParseInt(argText, 10, 64); err != nil {
			return "", 0, fmt.Errorf("function %q: argument %q is not an integer", op, argText)
		}
	}
	return op, arg, nil
}
