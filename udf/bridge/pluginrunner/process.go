package pluginrunner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/hashicorp/go-plugin/runner"
	"google.golang.org/grpc"

	"github.com/flinkgo/flinkgo/udf/bridge"
	"github.com/flinkgo/flinkgo/udf/bridge/proto/workerpb"
)

// The go-plugin handshake the worker checks (python/flinkgo/worker/server.py).
var handshake = plugin.HandshakeConfig{
	ProtocolVersion:  1,
	MagicCookieKey:   "FLINKGO_WORKER_COOKIE",
	MagicCookieValue: "8f2c1d5e-flinkgo-python-udf-worker",
}

// maxMessageEnv passes the gRPC message limit to the worker before it starts
// its server (it cannot wait for Open).
const maxMessageEnv = "FLINKGO_MAX_MESSAGE_BYTES"

// Process is a started worker process, as the runner supervises it. It is
// kept apart from the wire protocol so supervision reads on its own.
type Process interface {
	// Pid is the operating system's process id.
	Pid() int
	// Exited reports whether the process has ended and been reaped.
	Exited() bool
	// ExitStatus describes how it ended ("exit status 1", "signal: killed"),
	// or "still running".
	ExitStatus() string
	// StderrTail returns the last lines the process wrote to stderr.
	StderrTail() []string
	// Stop ends the process: SIGTERM, then SIGKILL after grace, then waits
	// for it to be reaped and cleans up its socket directory. It never waits
	// on the worker's cooperation beyond grace. Safe to call twice.
	Stop(grace time.Duration)
	// Shutdown asks the worker to exit through go-plugin's controller and
	// waits for it, killing it after shutdownGrace: a stopped or hung
	// worker holds it that long at most. Safe to call twice.
	Shutdown()
}

var _ Process = (*pluginProcess)(nil)

// pluginProcess is a worker started with go-plugin from an exec.Cmd.
type pluginProcess struct {
	client *plugin.Client
	// wc is the worker's command, set by go-plugin's RunnerFunc; read it
	// only after startProcess returned.
	wc     *workerCmd
	cmd    *exec.Cmd
	stderr *lineTail
	conn   workerpb.UdfWorkerClient
	// socketDir is the worker's own socket directory, removed after death
	// when the worker could not do it itself (SIGKILL).
	socketDir string
	// stopping is set once the runtime itself signals the worker, so a
	// SIGKILL it sent is not taken for the OOM killer's.
	stopping atomic.Bool
	// logTo is the logger go-plugin's records and the worker's lines go to,
	// and prefix how its printed lines are tagged on the user's terminal:
	// the runner using the worker sets both (see Pool).
	logTo  *atomic.Pointer[slog.Logger]
	prefix *atomic.Pointer[string]
	// silenced is set once the runtime kills the worker (Stop: cancel, or
	// the runtime's shutdown); shared with the output writers and
	// go-plugin's logger, which then demote the worker's output to debug.
	// An orderly Shutdown keeps it: what the worker prints while it
	// finishes is the user's.
	silenced *atomic.Bool
	// workerPid is the pid of the process that runs the UDFs, from its Open
	// answer (Pid).
	workerPid atomic.Int64
	// stderrOut takes go-plugin's copy of the worker's stderr.
	stderrOut *stderrLines
	// outputs are what the worker prints (stdout, stderr), each ending with
	// a partial line once the worker is gone.
	outputs []*udfOutput
}

// maxSocketPath is the longest Unix socket path the system takes:
// sun_path holds 108 bytes on Linux, 104 on macOS and the BSDs, with the
// terminating NUL.
var maxSocketPath = map[bool]int{true: 107, false: 103}[runtime.GOOS == "linux"]

// workerSocketTail is the most a worker's socket paths add to the temp dir:
// go-plugin's "/plugin-dir<10 digits>", the worker's
// "/flinkgo-worker-<10 chars>" and "/data-<subtask>.sock" or "/plugin.sock".
const workerSocketTail = len("/plugin-dir0123456789/flinkgo-worker-0123456789/data-99999.sock")

// SocketDirFits reports whether workers started with dir as the temp dir
// ($TMPDIR) can bind their Unix sockets there: a socket path has a short
// length limit.
func SocketDirFits(dir string) bool { return len(dir)+workerSocketTail <= maxSocketPath }

// startProcess starts the worker and connects to it. It blocks until the
// handshake is done, opts.StartTimeout passes, or ctx ends.
// log is the runner's logger; go-plugin gets it through an hclog adapter.
// pid is set once the process started.
func startProcess(ctx context.Context, opts Options, log *slog.Logger, pid *atomic.Int64) (*pluginProcess, error) {
	if tmp := os.TempDir(); !SocketDirFits(tmp) {
		return nil, &startError{msg: fmt.Sprintf("%v: the temp dir %q is too long for the worker's Unix socket paths (%d bytes at most, %d of them under the temp dir): set $TMPDIR to a shorter directory",
			bridge.ErrWorkerStart, tmp, maxSocketPath, workerSocketTail)}
	}
	stderr := newLineTail(stderrTailLines)
	silenced := new(atomic.Bool)
	prefix := new(atomic.Pointer[string])
	prefix.Store(ptr(outputPrefix(opts.udfNames(), opts.Subtask)))
	guard := &startGuard{pid: pid}
	outputs := []*udfOutput{
		newUDFOutput(log, pid, "udf stdout", opts.UDFOutput, prefix, silenced),
		newUDFOutput(log, pid, "udf stderr", opts.UDFOutput, prefix, silenced),
	}
	stderrOut := newStderrLines(stderr, outputs[1])
	extraEnv := append([]string{maxMessageEnv + "=" + strconv.Itoa(opts.MaxMessageBytes)}, opts.Env...)
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig: handshake,
		Plugins:         plugin.PluginSet{"udf": udfPlugin{}},
		// Our own runner, so that a start canceled half-way leaves no
		// process (go-plugin's Kill does nothing before its Start began).
		RunnerFunc: func(_ hclog.Logger, spec *exec.Cmd, socketDir string) (runner.Runner, error) {
			guard.setSocketDir(socketDir)
			return guard.newCmd(opts.Python, append(spec.Env, extraEnv...))
		},
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		StartTimeout:     opts.StartTimeout,
		Logger:           newSlogHCLog(log, pid, opts.Python).withSilenced(silenced),
		Stderr:           stderrOut,
		SyncStdout:       outputs[0],
		SyncStderr:       outputs[1],
		GRPCDialOptions: []grpc.DialOption{grpc.WithDefaultCallOptions(
			grpc.MaxCallRecvMsgSize(opts.MaxMessageBytes),
			grpc.MaxCallSendMsgSize(opts.MaxMessageBytes),
		)},
	})
	p := &pluginProcess{client: client, stderr: stderr, stderrOut: stderrOut, outputs: outputs, prefix: prefix, silenced: silenced}

	type dispensed struct {
		conn workerpb.UdfWorkerClient
		err  error
	}
	done := make(chan dispensed, 1)
	go func() {
		rpc, err := client.Client()
		if err != nil {
			done <- dispensed{err: err}
			return
		}
		raw, err := rpc.Dispense("udf")
		if err != nil {
			done <- dispensed{err: err}
			return
		}
		done <- dispensed{conn: raw.(workerpb.UdfWorkerClient)}
	}()
	var d dispensed
	select {
	case d = <-done:
	case <-ctx.Done():
		guard.abort()
		<-done
		client.Kill()
		guard.removeSocketDir()
		return nil, fmt.Errorf("%w: %w", bridge.ErrWorkerStart, context.Cause(ctx))
	}
	p.wc = guard.cmd()
	if p.wc == nil {
		client.Kill()
		guard.removeSocketDir()
		return nil, p.startError(d.err)
	}
	p.cmd = p.wc.cmd
	if d.err != nil {
		p.kill()
		guard.removeSocketDir()
		return nil, p.startError(d.err)
	}
	p.conn = d.conn
	if rc := client.ReattachConfig(); rc != nil && rc.Addr != nil {
		p.socketDir = filepath.Dir(rc.Addr.String())
	}
	return p, nil
}

func (p *pluginProcess) startError(err error) error {
	status, path := "", "python"
	if p.cmd != nil {
		path = p.cmd.Path
		if p.client.Exited() && p.cmd.ProcessState != nil {
			status = " (" + p.cmd.ProcessState.String() + ")"
		}
	}
	var msg string
	if line, ok := strayStdoutLine(err); ok {
		msg = fmt.Sprintf("%v: python %q%s: something printed to stdout before the worker started (a sitecustomize.py, a .pth file or a module imported at start?): %q; the worker's first stdout line must be the go-plugin handshake, so print to stderr instead",
			bridge.ErrWorkerStart, path, status, line)
	} else {
		msg = fmt.Sprintf("%v: python %q%s: %v", bridge.ErrWorkerStart, path, status, err)
	}
	if tail := p.stderr.Lines(); len(tail) > 0 {
		msg += "; last stderr lines:\n  " + strings.Join(tail, "\n  ")
	}
	if errors.Is(err, exec.ErrNotFound) || strings.Contains(err.Error(), "executable file not found") {
		msg += "\nset Options.Python or $" + PythonEnv + " to a Python with the flinkgo package installed"
	}
	return &startError{msg: msg}
}

// unrecognizedPrefix starts go-plugin's error for a first stdout line that
// is not its handshake.
const unrecognizedPrefix = "Unrecognized remote plugin message: "

// strayStdoutLine returns the line a worker printed to stdout in place of the
// handshake, if err is go-plugin's report of one (and not of an empty stdout).
func strayStdoutLine(err error) (string, bool) {
	text, ok := strings.CutPrefix(err.Error(), unrecognizedPrefix)
	if !ok || strings.Contains(text, "Failed to read any lines") {
		return "", false
	}
	line, _, _ := strings.Cut(text, "\n")
	return line, true
}

type startError struct{ msg string }

func (e *startError) Error() string { return e.msg }
func (e *startError) Unwrap() error { return bridge.ErrWorkerStart }

// Pid is the worker's process id: the process that runs the UDFs, a child
// of the process the runtime started (its supervisor, whose pid is the
// worker's process group id) once the worker told it in its Open answer.
func (p *pluginProcess) Pid() int {
	if w := p.workerPid.Load(); w != 0 {
		return int(w)
	}
	if p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// setWorkerPid takes the pid the worker's Open answer names, if it is the
// started process or its child (the worker under its supervisor).
func (p *pluginProcess) setWorkerPid(pid int) {
	if p.cmd.Process == nil || pid <= 0 {
		return
	}
	if pid == p.cmd.Process.Pid || parentPid(pid) == p.cmd.Process.Pid {
		p.workerPid.Store(int64(pid))
	}
}

func (p *pluginProcess) Exited() bool { return p.client.Exited() }

func (p *pluginProcess) ExitStatus() string {
	// go-plugin reaps the process; once Exited is true, ProcessState is set
	// and no longer written.
	if !p.client.Exited() || p.cmd.ProcessState == nil {
		return "still running"
	}
	return p.cmd.ProcessState.String()
}

// ExitCause names the likely reason for the exit when the runtime did not
// stop the worker itself, or "".
func (p *pluginProcess) ExitCause() string {
	if p.stopping.Load() || !p.client.Exited() || p.cmd.ProcessState == nil {
		return ""
	}
	return unexpectedKillNote(p.cmd.ProcessState)
}

func (p *pluginProcess) StderrTail() []string { return p.stderr.Lines() }

// waitExited polls until the process is reaped or d passes.
func (p *pluginProcess) waitExited(d time.Duration) bool {
	deadline := time.Now().Add(d)
	for !p.client.Exited() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(2 * time.Millisecond)
	}
	return true
}

func (p *pluginProcess) Stop(grace time.Duration) {
	p.stopping.Store(true)
	p.silenced.Store(true)
	if proc := p.cmd.Process; proc != nil && !p.client.Exited() {
		_ = signalGroup(proc, syscall.SIGTERM)
		if !p.waitExited(grace) {
			_ = p.wc.Kill(context.Background())
			// A killed process is reaped at once; the bound only guards
			// against an uninterruptible kernel wait.
			p.waitExited(10 * time.Second)
		}
	}
	// The process is gone, so go-plugin's Kill returns without waiting.
	p.client.Kill()
	p.flushOutput()
	p.removeSocketDir()
}

// flushOutput emits what the ended worker printed without a final newline.
func (p *pluginProcess) flushOutput() {
	p.stderrOut.flush()
	for _, o := range p.outputs {
		o.flush()
	}
}

// Shutdown asks the worker to exit (go-plugin's Kill: a shutdown request,
// then up to 2 s for the exit) and kills its process group after
// shutdownGrace: a worker that is stopped or hung answers no request, and
// go-plugin's request waits for an exit that would then never come.
func (p *pluginProcess) Shutdown() {
	p.stopping.Store(true)
	p.kill()
	p.flushOutput()
	p.removeSocketDir()
}

// kill is go-plugin's Kill, bounded by shutdownGrace (Shutdown).
func (p *pluginProcess) kill() {
	asked := make(chan struct{})
	go func() {
		defer close(asked)
		p.client.Kill()
	}()
	select {
	case <-asked:
	case <-time.After(shutdownGrace):
		p.silenced.Store(true)
		_ = p.wc.Kill(context.Background())
		<-asked // the exit ends go-plugin's wait
	}
}

// shutdownGrace bounds an orderly shutdown: a healthy worker exits within
// milliseconds of the request.
const shutdownGrace = time.Second

func (p *pluginProcess) removeSocketDir() {
	if p.socketDir != "" && strings.HasPrefix(filepath.Base(p.socketDir), "flinkgo-worker-") {
		_ = os.RemoveAll(p.socketDir)
	}
}

// udfPlugin is the go-plugin glue: it hands out the generated gRPC client.
type udfPlugin struct{ plugin.NetRPCUnsupportedPlugin }

func (udfPlugin) GRPCServer(*plugin.GRPCBroker, *grpc.Server) error {
	return errors.New("pluginrunner: the UDF worker is served by Python, not Go")
}

func (udfPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, conn *grpc.ClientConn) (any, error) {
	return workerpb.NewUdfWorkerClient(conn), nil
}

// startGuard lets startProcess abort a start that go-plugin has not
// finished: before the process exists, its start is refused; after, it is
// killed.
type startGuard struct {
	mu      sync.Mutex
	aborted bool
	wc      *workerCmd
	pid     *atomic.Int64 // set once the process started, for the logs
	// socketDir is go-plugin's directory for the worker's sockets. Kill
	// removes it only when a process was started, so a failed start does.
	socketDir string
}

func (g *startGuard) setSocketDir(dir string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.socketDir = dir
}

func (g *startGuard) removeSocketDir() {
	g.mu.Lock()
	dir := g.socketDir
	g.mu.Unlock()
	if dir != "" && strings.HasPrefix(filepath.Base(dir), "plugin-dir") {
		_ = os.RemoveAll(dir)
	}
}

var errStartAborted = errors.New("start canceled")

func (g *startGuard) newCmd(python string, env []string) (*workerCmd, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.aborted {
		return nil, errStartAborted
	}
	wc, err := newWorkerCmd(python, env, g)
	g.wc = wc
	return wc, err
}

func (g *startGuard) cmd() *workerCmd {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.wc
}

func (g *startGuard) abort() {
	g.mu.Lock()
	g.aborted = true
	wc := g.wc
	g.mu.Unlock()
	if wc != nil {
		_ = wc.Kill(context.Background())
	}
}

// workerCmd is go-plugin's view of the worker process (runner.Runner):
// `python -m flinkgo.worker` with go-plugin's environment.
//
// go-plugin reads the worker's stdout and stderr to their end before it
// waits for the process, and its Kill waits for that. A process a UDF
// started keeps both pipes open as long as it lives, in whatever session,
// so the pipes are ours: the process is waited for on its own, and once it
// has ended, its pipes are read for pipeDrain at most, then end for
// go-plugin as if at EOF.
type workerCmd struct {
	cmd            *exec.Cmd
	stdout, stderr *os.File // read ends
	stdoutW        *os.File // write ends, closed once the child has them
	stderrW        *os.File
	guard          *startGuard
	exited         chan struct{} // closed once the process is reaped
	waitErr        error         // set before exited is closed
}

var _ runner.Runner = (*workerCmd)(nil)

// pipeDrain bounds the reading of a worker's output after its end: the
// pipes reach EOF at once unless a process that escaped the supervisor
// holds them.
const pipeDrain = 250 * time.Millisecond

func newWorkerCmd(python string, env []string, guard *startGuard) (*workerCmd, error) {
	cmd := exec.Command(python, "-m", "flinkgo.worker")
	// The worker compares its parent with this from its first moment, so a
	// host that dies before the worker starts watching still frees it.
	cmd.Env = append(env, "FLINKGO_HOST_PID="+strconv.Itoa(os.Getpid()))
	cmd.SysProcAttr = workerSysProcAttr()
	stdout, stdoutW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	stderr, stderrW, err := os.Pipe()
	if err != nil {
		closeAll(stdout, stdoutW)
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = stdoutW, stderrW
	return &workerCmd{cmd: cmd, stdout: stdout, stderr: stderr, stdoutW: stdoutW, stderrW: stderrW,
		guard: guard, exited: make(chan struct{})}, nil
}

func closeAll(files ...*os.File) {
	for _, f := range files {
		_ = f.Close()
	}
}

// Start starts the process unless the start was aborted; the guard's lock
// orders it with abort.
func (w *workerCmd) Start(context.Context) error {
	w.guard.mu.Lock()
	defer w.guard.mu.Unlock()
	if w.guard.aborted {
		closeAll(w.stdoutW, w.stderrW, w.stdout, w.stderr)
		return errStartAborted
	}
	err := w.cmd.Start()
	closeAll(w.stdoutW, w.stderrW)
	if err != nil {
		closeAll(w.stdout, w.stderr)
		return err
	}
	w.guard.pid.Store(int64(w.cmd.Process.Pid))
	go w.wait()
	return nil
}

func (w *workerCmd) wait() {
	w.waitErr = w.cmd.Wait()
	deadline := time.Now().Add(pipeDrain)
	_ = w.stdout.SetReadDeadline(deadline)
	_ = w.stderr.SetReadDeadline(deadline)
	close(w.exited)
}

// Wait returns once the process has ended; go-plugin calls it after reading
// both pipes to their end, so they are closed here.
func (w *workerCmd) Wait(context.Context) error {
	<-w.exited
	closeAll(w.stdout, w.stderr)
	return w.waitErr
}

// Kill SIGKILLs the worker's group and, should its supervisor not exit
// within supervisorGrace (stopped, or stuck), the supervisor itself.
func (w *workerCmd) Kill(context.Context) error {
	p := w.cmd.Process
	if p == nil {
		return nil
	}
	if err := signalGroup(p, syscall.SIGKILL); err != nil {
		return err
	}
	select {
	case <-w.exited:
	case <-time.After(supervisorGrace):
		if err := p.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
			return err
		}
	}
	return nil
}

// supervisorGrace is how long the worker's supervisor may take to kill what
// the worker left and exit once the worker is gone: milliseconds, unless it
// is stopped or stuck.
const supervisorGrace = time.Second

// endOfOutput reads a worker's pipe, and ends at the pipe's read deadline
// as at EOF: the worker has exited by then (workerCmd.wait).
type endOfOutput struct{ f *os.File }

func (r endOfOutput) Read(b []byte) (int, error) {
	n, err := r.f.Read(b)
	if errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, os.ErrClosed) {
		err = io.EOF
	}
	return n, err
}

func (endOfOutput) Close() error { return nil }

func (w *workerCmd) Stdout() io.ReadCloser { return endOfOutput{w.stdout} }
func (w *workerCmd) Stderr() io.ReadCloser { return endOfOutput{w.stderr} }
func (w *workerCmd) Name() string          { return w.cmd.Path }

func (w *workerCmd) ID() string {
	if p := w.cmd.Process; p != nil {
		return strconv.Itoa(p.Pid)
	}
	return ""
}

func (w *workerCmd) Diagnose(context.Context) string {
	return fmt.Sprintf("the worker did not complete the go-plugin handshake: check that %s can `import flinkgo` (pip install flinkgo in that environment)", w.cmd.Path)
}

func (w *workerCmd) PluginToHost(network, addr string) (string, string, error) {
	return network, addr, nil
}

func (w *workerCmd) HostToPlugin(network, addr string) (string, string, error) {
	return network, addr, nil
}
