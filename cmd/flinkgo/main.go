// Command flinkgo is the flinkgo runtime:
//
//	flinkgo serve [--listen ADDR] [--parent-pid N] [--allow-path DIR]...
//	    [--allow-endpoint HOST:PORT]... [--allow-group GROUP] [--token-file PATH] [--udf-output log|stderr] [LOG FLAGS]
//	    [--tls-cert PEM --tls-key PEM [--tls-client-ca PEM]]
//	    [--max-message-size BYTES]
//	    [--rest-port N] [--prom-port N] [--rest-address HOST] [--rest-auth-token-file PATH]
//	    [--rest-read-access owner|any] [--rest-allowed-hosts NAMES]
//	                                                  run a runtime server
//	flinkgo run [--from-savepoint PATH] [--allow-non-restored-state] [LOG FLAGS] PIPELINE.py [ARGS...]
//	                                                  run a pipeline file on a runtime started for it
//	flinkgo list [--endpoint ADDR] [--all]            list the running (--all: and ended) jobs of a server
//	flinkgo savepoint [--endpoint ADDR] JOB_ID [DIR]  take a savepoint of a running job
//	flinkgo stop [--endpoint ADDR] [--savepoint-dir DIR] JOB_ID
//	                                                  stop a job with a savepoint
//	flinkgo rescale [--endpoint ADDR] JOB_ID [UID=N]...
//	                                                  rescale a running job in place
//	flinkgo cancel [--endpoint ADDR] JOB_ID           cancel a job
//	flinkgo config [-c KEY=VALUE]... [--plan FILE]    print the effective configuration
//	flinkgo version
//	flinkgo help (or --help, -h; COMMAND --help)      print the usage, exit 0
//
// LOG FLAGS are --log-level debug|info|warn|error (default warn; job state
// changes are at info) and --log-format text|json (default text); the
// environment variables FLINKGO_LOG_LEVEL and FLINKGO_LOG_FORMAT set them
// when the flag is not given. Logs go to stderr.
//
// ADDR is unix:///path/to.sock or host:port; the default is a Unix socket
// in a private directory ($XDG_RUNTIME_DIR/flinkgo, else flinkgo-<uid> in
// the temp dir) that admits only the server's user and root. TCP calls
// need the server's token (and TLS off loopback); see package
// runtime/server/listen. The control commands take --token, --token-file
// or $FLINKGO_TOKEN, and --tls, --tls-ca, --tls-cert, --tls-key. The
// Python package starts `flinkgo serve` as its embedded local runtime;
// `Environment(endpoint=ADDR, token=...)` submits to a server started by
// hand.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"

	"github.com/flinkgo/flinkgo/internal/gctune"
	"github.com/flinkgo/flinkgo/internal/logging"
	"github.com/flinkgo/flinkgo/internal/rundir"
	"github.com/flinkgo/flinkgo/runtime/config"
	"github.com/flinkgo/flinkgo/runtime/job"
	"github.com/flinkgo/flinkgo/runtime/proto/jobpb"
	"github.com/flinkgo/flinkgo/runtime/rest"
	"github.com/flinkgo/flinkgo/runtime/server"
	"github.com/flinkgo/flinkgo/runtime/server/allowendpoint"
	"github.com/flinkgo/flinkgo/runtime/server/allowpath"
	"github.com/flinkgo/flinkgo/runtime/server/listen"
	"github.com/flinkgo/flinkgo/udf/bridge/pluginrunner"
)

const version = "0.1.0"

// maxSendMessage bounds the messages the server sends (collected rows,
// a batch at a time). What it receives is bounded by --max-message-size.
const maxSendMessage = 1 << 30

// localMaxMessage is the request limit of `flinkgo run`'s private server,
// whose only client is the pipeline it runs as the same user (the Python
// package passes it to its embedded runtime too): in-memory tables of up to
// 1 GiB, as before the server's default was lowered.
const localMaxMessage = 1 << 30

func main() {
	gctune.Apply()
	// A write to a closed stdout or stderr (a killed client, `flinkgo serve |
	// head`) must fail that write, not kill the runtime with SIGPIPE before
	// it stops its workers and removes its files.
	signal.Ignore(syscall.SIGPIPE)
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "-h", "-help", "--help", "help":
		printUsage(os.Stdout)
	case "serve":
		err = serve(os.Args[2:])
	case "run":
		err = run(os.Args[2:])
	case "list", "savepoint", "stop", "rescale", "cancel":
		err = control(os.Args[1], os.Args[2:])
	case "config":
		err = showConfig(os.Args[2:], os.Stdout)
	case "version":
		fmt.Println("flinkgo", version)
	default:
		usage()
		fmt.Fprintf(os.Stderr, "flinkgo: unknown command %q\n", os.Args[1])
		os.Exit(2)
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		os.Exit(exit.ExitCode())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "flinkgo:", err)
		os.Exit(1)
	}
}

// usage prints the usage on stderr, for a command line that is wrong.
func usage() { printUsage(os.Stderr) }

// printUsage prints every command's usage to w.
func printUsage(w io.Writer) {
	fmt.Fprintln(w, `usage:
  flinkgo serve [--listen ADDR] [--parent-pid N] [--reuse-workers] [--allow-path DIR]... [--allow-endpoint HOST:PORT]...
                [--allow-group GROUP]
                [--token-file PATH] [--tls-cert PEM --tls-key PEM [--tls-client-ca PEM]]
                [--max-message-size BYTES (default 64MiB)]
                [--rest-port N] [--prom-port N] [--rest-address HOST] [--rest-auth-token-file PATH]
                [--rest-read-access owner|any] [--rest-allowed-hosts NAMES]
                [--udf-output log|stderr] [--log-level LEVEL] [--log-format text|json]
  flinkgo run [--from-savepoint PATH] [--allow-non-restored-state] [--log-level LEVEL] [--log-format text|json] PIPELINE.py [ARGS...]
  flinkgo list [--endpoint ADDR] [--all]
  flinkgo savepoint [--endpoint ADDR] JOB_ID [DIR]
  flinkgo stop [--endpoint ADDR] [--savepoint-dir DIR] JOB_ID
  flinkgo rescale [--endpoint ADDR] JOB_ID [UID=N]...
  flinkgo cancel [--endpoint ADDR] JOB_ID
  flinkgo config [-c KEY=VALUE]... [--plan FILE]
  flinkgo version
  flinkgo help                                     (or --help; COMMAND --help for a command's flags)
list, savepoint, stop, rescale and cancel also take --token TOKEN, --token-file PATH
(else $FLINKGO_TOKEN), --tls, --tls-ca PEM, --tls-cert PEM and --tls-key PEM.`)
}

// newFlagSet returns the flag set of a command: -h or --help prints the
// command's usage line and flags on stdout and exits 0, as the top-level
// --help does; a wrong flag prints them on stderr and exits 2.
func newFlagSet(cmd string, args []string) *flag.FlagSet {
	fs := flag.NewFlagSet(cmd, flag.ExitOnError)
	for _, a := range args {
		if a == "--" || !strings.HasPrefix(a, "-") {
			break // the flags end here (`run` passes the rest to the pipeline)
		}
		if a == "-h" || a == "-help" || a == "--help" {
			fs.SetOutput(os.Stdout)
		}
	}
	fs.Usage = func() {
		w := fs.Output()
		for _, line := range strings.Split(usageText(), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "flinkgo "+cmd+" ") || strings.TrimSpace(line) == "flinkgo "+cmd {
				fmt.Fprintln(w, "usage:", strings.TrimSpace(line))
			}
		}
		fs.PrintDefaults()
	}
	return fs
}

// usageText is printUsage's text.
func usageText() string {
	var sb strings.Builder
	printUsage(&sb)
	return sb.String()
}

// repeatedFlag collects a repeatable string flag.
type repeatedFlag []string

func (r *repeatedFlag) String() string { return strings.Join(*r, ",") }

func (r *repeatedFlag) Set(v string) error {
	*r = append(*r, v)
	return nil
}

// AllowPathEnv lists further roots of client-chosen paths, separated like
// $PATH; "/" allows any path (the embedded runtime sets it so).
const AllowPathEnv = "FLINKGO_ALLOW_PATH"

// AllowEndpointEnv lists further endpoints clients may name, separated by
// commas; "*" allows any (the embedded runtime sets it so).
const AllowEndpointEnv = "FLINKGO_ALLOW_ENDPOINT"

// endpointList returns the endpoints clients may name (Kafka bootstrap
// servers, s3.endpoint): the --allow-endpoint flags and
// $FLINKGO_ALLOW_ENDPOINT; none when neither is given.
func endpointList(flags []string) (*allowendpoint.List, error) {
	entries := slices.Clone(flags)
	for e := range strings.SplitSeq(os.Getenv(AllowEndpointEnv), ",") {
		if strings.TrimSpace(e) != "" {
			entries = append(entries, e)
		}
	}
	return allowendpoint.New(entries)
}

func serve(args []string) error {
	fs := newFlagSet("serve", args)
	addr := fs.String("listen", "", "unix:///path.sock or host:port (default: unix://"+filepath.Join(listen.DefaultDir(), listen.SocketName)+", a private directory)")
	parent := fs.Int("parent-pid", 0, "exit when this process is gone (the embedded runtime's client)")
	reuse := fs.Bool("reuse-workers", false, "keep the Python workers of ended jobs idle for later jobs (python.worker.idle-timeout, .max-idle); only for a runtime whose clients may share processes (the embedded runtime sets it: it serves one Python process)")
	group := fs.String("allow-group", "", "Unix socket: also admit the members of this group (name or gid)")
	tokenFile := fs.String("token-file", "", "TCP: the file holding the clients' bearer token, generated (0600) when missing (default: "+filepath.Join(listen.DefaultDir(), listen.TokenName)+")")
	tlsCert := fs.String("tls-cert", "", "TCP: serve TLS with this PEM certificate (chain)")
	tlsKey := fs.String("tls-key", "", "TCP: the PEM private key of --tls-cert")
	tlsClientCA := fs.String("tls-client-ca", "", "TCP: require client certificates signed by this PEM CA (mutual TLS)")
	maxMessage := byteSize(server.DefaultMaxMessageBytes)
	fs.Var(&maxMessage, "max-message-size", "the largest request (a plan with its inline data) the server reads, in bytes or with a KiB, MiB or GiB suffix")
	udfOutput := fs.String("udf-output", "log", "where what UDFs print goes: log (the server's log, at info) or stderr (prefixed with the UDF and subtask, for the runtime embedded in a user's program)")
	var allowPaths repeatedFlag
	fs.Var(&allowPaths, "allow-path", "a directory under which clients may read and write files, checkpoints and savepoints (repeatable; default: the working directory and $TMPDIR/flinkgo-<uid>, made 0700; / allows any path, s3:// included); s3://BUCKET/PREFIX allows checkpoints and savepoints under that object-storage prefix")
	var allowEndpoints repeatedFlag
	fs.Var(&allowEndpoints, "allow-endpoint", "a Kafka bootstrap server or S3 endpoint (s3.endpoint) that jobs may name: host:port, a host (any port), a URL, or * for any (repeatable; default: none, S3 at AWS needs no entry)")
	restAddress := fs.String("rest-address", rest.DefaultAddress, "the address of the REST API and Prometheus endpoint; another than loopback needs a REST token (--rest-auth-token-file or $"+RESTTokenEnv+")")
	restPort := fs.Int("rest-port", -1, "serve Flink's REST API (and /metrics) on this port (0: a free one); default none")
	promPort := fs.Int("prom-port", -1, "serve the jobs' metrics for Prometheus at /metrics on this port (metrics.reporter.prom.port); default none")
	restToken := fs.String("rest-auth-token", "", "a bearer token that admits its bearer to the REST API from anywhere; visible to other users in ps: prefer --rest-auth-token-file or $"+RESTTokenEnv+" (none of them: only the server's user, root and --allow-group's members on this host, over loopback)")
	restHosts := fs.String("rest-allowed-hosts", "", "names (comma-separated) the REST API answers to in a call's Host header besides IP addresses, localhost and --rest-address (against DNS rebinding)")
	restTokenFile := fs.String("rest-auth-token-file", "", "the file (0600) holding the REST API's bearer token (see --rest-auth-token)")
	restReadAccess := fs.String("rest-read-access", rest.ReadAccessOwner, "who may read the jobs through REST and /metrics: owner (those who may change them) or any (everyone who reaches the port)")
	newLogger := logFlags(fs)
	_ = fs.Parse(args)
	logger, err := newLogger()
	if err != nil {
		return err
	}
	token, err := restAuthToken(fs, *restToken, *restTokenFile)
	if err != nil {
		return err
	}
	// The REST API admits over loopback the local users the job socket
	// admits: the server's, root, and --allow-group's members.
	peers, err := listen.NewPeerRule(*group)
	if err != nil {
		return err
	}
	if *restReadAccess != rest.ReadAccessOwner && *restReadAccess != rest.ReadAccessAny {
		return fmt.Errorf("--rest-read-access %q: want %s or %s", *restReadAccess, rest.ReadAccessOwner, rest.ReadAccessAny)
	}
	endpoints := rest.Listen{Address: *restAddress, RESTPort: *restPort, PromPort: *promPort, AuthToken: token,
		Peers: &peers, ReadAccess: *restReadAccess}
	if *restHosts != "" {
		endpoints.AllowedHosts = strings.Split(*restHosts, ",")
	}
	if err := endpoints.Validate(); err != nil {
		return err
	}
	roots, err := pathRoots(allowPaths)
	if err != nil {
		return err
	}
	reach, err := endpointList(allowEndpoints)
	if err != nil {
		return err
	}
	var printed io.Writer
	switch *udfOutput {
	case "log":
	case "stderr":
		printed = os.Stderr
	default:
		return fmt.Errorf("--udf-output %q: want log or stderr", *udfOutput)
	}
	lis, err := listen.Open(listen.Options{
		Addr: *addr, AllowGroup: *group, TokenFile: *tokenFile,
		TLSCert: *tlsCert, TLSKey: *tlsKey, TLSClientCA: *tlsClientCA, Logger: logger,
	})
	if err != nil {
		return err
	}
	rd, err := openRunDir(logger)
	if err != nil {
		return err
	}
	defer rd.Remove()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *parent > 0 {
		ctx = watchParent(ctx, *parent)
	}
	if lis.TokenFile != "" {
		made := ""
		if lis.TokenCreated {
			made = " (generated now)"
		}
		fmt.Fprintf(os.Stderr, "flinkgo: clients authenticate with the token in %s%s: --token-file or $FLINKGO_TOKEN, Python Environment(token=...)\n", lis.TokenFile, made)
	}
	if !roots.AllowsAny() {
		fmt.Fprintf(os.Stderr, "flinkgo: clients may use paths under %s (--allow-path adds more)\n", roots)
	}
	if !reach.AllowsAny() {
		fmt.Fprintf(os.Stderr, "flinkgo: jobs may connect to these Kafka and S3 endpoints: %s (--allow-endpoint adds more)\n", reach)
	}
	fmt.Printf("flinkgo: serving on %s\n", lis.Address)
	return serveOn(ctx, lis, nil, logger, printed, roots, reach, int(maxMessage), *reuse, endpoints, lis.ServerOptions()...)
}

// RESTTokenEnv holds the REST API's token when no flag gives it.
const RESTTokenEnv = "FLINKGO_REST_TOKEN"

// restAuthToken returns the REST token of --rest-auth-token-file, else
// --rest-auth-token (with a warning: any user sees it in ps), else
// $FLINKGO_REST_TOKEN; "" for none.
func restAuthToken(fs *flag.FlagSet, arg, file string) (string, error) {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == "rest-auth-token" })
	switch {
	case file != "" && given:
		return "", errors.New("--rest-auth-token and --rest-auth-token-file: give one")
	case file != "":
		return listen.ReadTokenFile(file)
	case given:
		fmt.Fprintf(os.Stderr, "flinkgo: warning: --rest-auth-token is visible to every user of this host (ps, /proc/PID/cmdline); use --rest-auth-token-file or $%s\n", RESTTokenEnv)
		return strings.TrimSpace(arg), nil
	}
	return strings.TrimSpace(os.Getenv(RESTTokenEnv)), nil
}

// logFlags adds --log-level and --log-format to fs; after fs.Parse, the
// returned function builds the process's logger on stderr from them (or
// from $FLINKGO_LOG_LEVEL and $FLINKGO_LOG_FORMAT when not given).
func logFlags(fs *flag.FlagSet) func() (*slog.Logger, error) {
	level := fs.String("log-level", "", "debug, info, warn or error (default $"+logging.LevelEnv+", else warn)")
	format := fs.String("log-format", "", "text or json (default $"+logging.FormatEnv+", else text)")
	return func() (*slog.Logger, error) {
		cfg, err := logging.Resolve(*level, *format, os.Getenv)
		if err != nil {
			return nil, err
		}
		return logging.New(os.Stderr, cfg), nil
	}
}

// pathRoots returns the roots of client-chosen paths: the --allow-path
// flags and $FLINKGO_ALLOW_PATH, else the working directory and this
// user's own directory in the temp dir (userTempRoot), never the
// world-writable temp dir itself, where any local user can plant links
// and directories. s3://bucket/prefix roots allow object storage; they do
// not count as local roots, so the local default stays when only they are
// given.
func pathRoots(flags []string) (*allowpath.Roots, error) {
	dirs := slices.Clone(flags)
	env := filepath.SplitList(os.Getenv(AllowPathEnv))
	for i := 0; i < len(env); i++ {
		d := env[i]
		if d == "s3" && i+1 < len(env) && strings.HasPrefix(env[i+1], "//") { // s3://... split at its colon
			d, i = "s3:"+env[i+1], i+1
		}
		if d != "" {
			dirs = append(dirs, d)
		}
	}
	if !slices.ContainsFunc(dirs, func(d string) bool { return !strings.HasPrefix(d, "s3://") }) {
		wd, err := os.Getwd()
		if err != nil {
			return nil, err
		}
		tmp, err := userTempRoot(os.TempDir())
		if err != nil {
			return nil, err
		}
		dirs = append(dirs, wd, tmp)
	}
	return allowpath.New(dirs)
}

// userTempRoot makes (or finds) flinkgo-<uid> under tmp, 0700, for the
// default allowed root in the temp dir; one that is not this user's plain
// directory closed to others is refused, since another local user may have
// made it first.
func userTempRoot(tmp string) (string, error) {
	dir := filepath.Join(tmp, fmt.Sprintf("flinkgo-%d", os.Geteuid()))
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("the default allowed directory in the temp dir: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return "", fmt.Errorf("the default allowed directory in the temp dir: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok || int(st.Uid) != os.Geteuid() || fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("%s, the default allowed directory in the temp dir, is not a directory of this user's closed to others (mode %s): "+
			"another user may have made it; remove it, or start the server with %s DIR", dir, fi.Mode(), allowpath.Flag)
	}
	return dir, nil
}

// serveOn serves the job service on lis until ctx ends; running jobs are
// canceled then. logger receives the server's, the jobs' and the workers'
// logs; what UDFs print goes to udfOutput when set (see
// pluginrunner.Options.UDFOutput), else to logger. Clients may use the
// paths under roots and send requests of up to maxMessage bytes; guard are
// the listener's server options (token check, TLS). Jobs may name the
// Kafka and S3 endpoints of reach. With reuseWorkers, the
// Python workers of an ended job may serve the next one.
// serveOn serves the job service on lis, and the REST API and Prometheus
// endpoint that endpoints asks for; a job's rest.port and
// metrics.reporter.prom.port start them later when not started here.
func serveOn(ctx context.Context, lis net.Listener, defaults map[string]string, logger *slog.Logger, udfOutput io.Writer, roots *allowpath.Roots, reach *allowendpoint.List, maxMessage int, reuseWorkers bool, endpoints rest.Listen, guard ...grpc.ServerOption) error {
	opts := append([]grpc.ServerOption{grpc.MaxSendMsgSize(maxSendMessage)}, server.Guard(logger, maxMessage)...)
	srv := grpc.NewServer(append(opts, guard...)...)
	jobOpts := job.Options{Logger: logger, Runner: pluginrunner.Options{UDFOutput: udfOutput}}
	if reuseWorkers {
		// Workers are shared only between jobs of one client: one user's
		// code, one Python process (docs/semantics.md#worker-reuse).
		pool := pluginrunner.NewPool(logger)
		defer pool.Close()
		jobOpts.Runner.Pool = pool
	}
	jobs := server.New(jobOpts, defaults)
	jobs.AllowPaths(roots)
	jobs.AllowEndpoints(reach)
	ep := rest.NewEndpoints(jobs, logger)
	defer ep.Close()
	if err := ep.Start(endpoints); err != nil {
		return err
	}
	if a, p := ep.Addresses(); a != "" || p != "" {
		fmt.Fprintf(os.Stderr, "flinkgo: REST API and dashboard on %s, Prometheus metrics on %s\n", orNone(a), orNone(p))
	}
	jobs.SetEndpoints(ep.FromConfig)
	jobpb.RegisterJobServiceServer(srv, jobs)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(lis) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		// Every job takes its cancel path, detached ones included (they
		// outlive their calls, not their server); GracefulStop would wait
		// for jobs that may never end.
		jobs.CancelAll()
		srv.Stop()
		<-done
		jobs.Wait()
		return nil
	}
}

// orNone names an endpoint's address, or says it is not served.
func orNone(addr string) string {
	if addr == "" {
		return "(none)"
	}
	return "http://" + addr
}

// openRunDir makes this runtime's own directory under the temp dir, removes
// those of runtimes that died without removing theirs, and points $TMPDIR
// at it, so that everything this process and its workers create there
// (go-plugin's socket directories, local state stores, the UDFs' temp
// files) goes with it: removed when the runtime ends, or by the next one
// after a crash. Call it once the paths that must stay in the user's temp
// dir (the default listen directory, the allowed path roots) are resolved.
func openRunDir(logger *slog.Logger) (*rundir.Dir, error) {
	base := os.TempDir()
	rd, err := rundir.Create(base)
	if err != nil {
		return nil, err
	}
	for _, dir := range rundir.Sweep(base, logger) {
		logger.Info("removed the directory of a runtime that died", "dir", dir)
	}
	if !pluginrunner.SocketDirFits(rd.Path) && pluginrunner.SocketDirFits(base) {
		// The workers' socket paths must stay short: in a long temp dir they
		// go beside the runtime's directory, not into it, and a crash may
		// leave their plugin-dir* behind.
		logger.Info("the temp dir is too long to hold the workers' sockets under the runtime's own directory; they go in the temp dir itself", "dir", base)
		return rd, nil
	}
	if err := os.Setenv("TMPDIR", rd.Path); err != nil {
		_ = rd.Remove()
		return nil, err
	}
	return rd, nil
}

// watchParent ends the returned context when process pid is gone.
func watchParent(ctx context.Context, pid int) context.Context {
	ctx, cancel := context.WithCancel(ctx)
	startPPID := os.Getppid()
	go func() {
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				// Gone, or we were its child and got reparented.
				if syscall.Kill(pid, 0) != nil || (startPPID == pid && os.Getppid() != pid) {
					cancel()
					return
				}
			}
		}
	}()
	return ctx
}

// run starts a server on a private socket and runs the pipeline file with
// $FLINKGO_ENDPOINT pointing at it. --from-savepoint makes every job of the
// file start from that savepoint (or retained checkpoint).
func run(args []string) error {
	fs := newFlagSet("run", args)
	from := fs.String("from-savepoint", "", "start the jobs from this savepoint or retained checkpoint directory")
	allow := fs.Bool("allow-non-restored-state", false, "start even when the savepoint holds state of an operator the job no longer has")
	newLogger := logFlags(fs)
	_ = fs.Parse(args)
	logger, err := newLogger()
	if err != nil {
		return err
	}
	args = fs.Args()
	if len(args) == 0 {
		usage()
		return errors.New("run needs a pipeline file")
	}
	defaults := map[string]string{}
	if *from != "" {
		defaults[config.ConfigRestorePath] = *from
	}
	if *allow {
		defaults[config.ConfigIgnoreUnclaimedState] = "true"
	}
	// The pipeline's own temp files stay in the user's temp dir.
	pipelineEnv := os.Environ()
	rd, err := openRunDir(logger)
	if err != nil {
		return err
	}
	defer rd.Remove()
	sock := filepath.Join(rd.Path, "runtime.sock")
	lis, err := listen.Open(listen.Options{Addr: "unix://" + sock})
	if err != nil {
		return err
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	served := make(chan error, 1)
	// The pipeline runs as this user: any path and endpoint is its to choose, and what
	// its UDFs print is shown to the user, as the embedded runtime does.
	go func() {
		served <- serveOn(ctx, lis, defaults, logger, os.Stderr, allowpath.Any(), allowendpoint.Any(), localMaxMessage, true, rest.Listen{RESTPort: -1, PromPort: -1})
	}()

	python := os.Getenv(pluginrunner.PythonEnv)
	if python == "" {
		python = "python3"
	}
	cmd := exec.Command(python, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(pipelineEnv, "FLINKGO_ENDPOINT=unix://"+sock)
	// Ctrl-C reaches the pipeline through the terminal's process group; the
	// client cancels its job and exits.
	signal.Ignore(os.Interrupt)
	err = cmd.Run()
	stop()
	<-served
	return err
}

// byteSize is a flag holding a size in bytes: a number, optionally with a
// KiB, MiB or GiB suffix.
type byteSize int64

func (b *byteSize) String() string { return strconv.FormatInt(int64(*b), 10) }

func (b *byteSize) Set(v string) error {
	mult := int64(1)
	for suffix, m := range map[string]int64{"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30} {
		if n, ok := strings.CutSuffix(v, suffix); ok {
			v, mult = n, m
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < 1 || n > (1<<31-1)/mult {
		return fmt.Errorf("%q is not a size between 1 byte and 2GiB-1 (a number, optionally with KiB, MiB or GiB)", v)
	}
	*b = byteSize(n * mult)
	return nil
}
