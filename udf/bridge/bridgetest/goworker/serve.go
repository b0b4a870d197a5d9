package goworker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/flinkgo/flinkgo/udf/bridge/proto/workerpb"
)

// The go-plugin handshake, as the host checks it (pluginrunner's handshake,
// python/flinkgo/worker/server.py).
var handshake = plugin.HandshakeConfig{
	ProtocolVersion:  1,
	MagicCookieKey:   "FLINKGO_WORKER_COOKIE",
	MagicCookieValue: "8f2c1d5e-flinkgo-python-udf-worker",
}

const (
	// maxMessageEnv carries the host's gRPC message limit.
	maxMessageEnv     = "FLINKGO_MAX_MESSAGE_BYTES"
	defaultMaxMessage = 16 << 20
	// hostPidEnv names the host process; the worker exits when its parent
	// is no longer that process.
	hostPidEnv = "FLINKGO_HOST_PID"
	parentPoll = 200 * time.Millisecond
)

// stderr is the process's real standard error: plugin.Serve points
// os.Stderr at go-plugin's stdio stream, but the host reads the worker's
// logs and its last words from file descriptor 2, as it does the Python
// worker's.
var stderr = os.Stderr

// serve runs the worker process and returns its exit status.
func serve(start Start) int {
	switch start {
	case Serve:
	case PrintAtStart:
		fmt.Println(StrayStdoutLine)
	case ExitAtStart:
		fmt.Fprintln(stderr, StartExitLine)
		return 3
	case HangAtStart:
		// Until SIGTERM or SIGKILL; waiting on a signal, not on nothing, the
		// runtime cannot take the wait for a deadlock.
		terms := make(chan os.Signal, 1)
		signal.Notify(terms, syscall.SIGTERM)
		<-terms
		return 0
	default:
		fmt.Fprintf(stderr, "goworker: %s=%q is not a known start (serve, exit-at-start, hang-at-start)\n", Env, start)
		return 2
	}
	if os.Getenv(handshake.MagicCookieKey) != handshake.MagicCookieValue {
		fmt.Fprintln(stderr, "This is flinkgo's Go test worker; a runner starts it.")
		return 1
	}
	// As the Python worker: Ctrl-C goes to the whole process group, and the
	// host decides what happens.
	signal.Ignore(syscall.SIGINT)

	maxMessage := defaultMaxMessage
	if v, err := strconv.Atoi(os.Getenv(maxMessageEnv)); err == nil && v > 0 {
		maxMessage = v
	}
	// The worker's own 0700 directory holds go-plugin's socket and the data
	// socket; the host removes it when the worker could not (SIGKILL).
	dir, err := os.MkdirTemp(os.Getenv(plugin.EnvUnixSocketDir), "flinkgo-worker-")
	if err != nil {
		fmt.Fprintln(stderr, "goworker:", err)
		return 1
	}
	exit := func(code int) {
		_ = os.RemoveAll(dir)
		os.Exit(code)
	}
	if err := os.Setenv(plugin.EnvUnixSocketDir, dir); err != nil {
		fmt.Fprintln(stderr, "goworker:", err)
		exit(1)
	}

	level := os.Getenv("FLINKGO_WORKER_LOG_LEVEL")
	if level == "" {
		level = "info"
	}
	logger := hclog.New(&hclog.LoggerOptions{
		Name: "goworker", Level: hclog.LevelFromString(level), Output: stderr, JSONFormat: true,
	})

	terms := make(chan os.Signal, 1)
	signal.Notify(terms, syscall.SIGTERM)
	go func() {
		<-terms
		logger.Debug("terminated by the host")
		exit(0)
	}()
	go watchParent(logger, exit)

	worker := &service{dir: dir, maxMessage: maxMessage, logger: logger}
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: handshake,
		Plugins:         plugin.PluginSet{"udf": udfPlugin{worker: worker}},
		GRPCServer: func(opts []grpc.ServerOption) *grpc.Server {
			return grpc.NewServer(append(opts,
				grpc.MaxRecvMsgSize(maxMessage), grpc.MaxSendMsgSize(maxMessage))...)
		},
		Logger: logger,
	})
	// plugin.Serve returns when the host's Shutdown stopped the server, or
	// at once when it could not start serving (it logged why). A batch
	// still running (a hung UDF) must not keep the process alive.
	worker.closeChain()
	if !worker.registered.Load() {
		exit(1)
	}
	exit(0)
	return 0
}

// watchParent exits when the host is gone: a host that crashed cannot ask
// the worker to exit, but the worker is reparented.
func watchParent(logger hclog.Logger, exit func(int)) {
	parent := os.Getppid()
	if pid, err := strconv.Atoi(os.Getenv(hostPidEnv)); err == nil {
		// A host that died before this line left the worker reparented
		// already; the pid it gave says so.
		parent = pid
	}
	for {
		if os.Getppid() != parent {
			logger.Warn("host process is gone; worker exits")
			exit(0)
		}
		time.Sleep(parentPoll)
	}
}

// udfPlugin registers the UdfWorker service on go-plugin's gRPC server.
type udfPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	worker *service
}

func (p udfPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	workerpb.RegisterUdfWorkerServer(s, p.worker)
	p.worker.registered.Store(true)
	return nil
}

func (udfPlugin) GRPCClient(context.Context, *plugin.GRPCBroker, *grpc.ClientConn) (any, error) {
	return nil, errors.New("goworker: the Go worker only serves; the host is pluginrunner")
}
