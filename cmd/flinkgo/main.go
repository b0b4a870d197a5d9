// Command flinkgo is the flinkgo runtime:
//
//	flinkgo serve [--listen ADDR] [--parent-pid N]   run a runtime server
//	flinkgo run [--from-savepoint PATH] [--allow-non-restored-state] PIPELINE.py [ARGS...]
//	                                                  run a pipeline file on a runtime started for it
//	flinkgo list [--endpoint ADDR]                    list the running jobs of a server
//	flinkgo savepoint [--endpoint ADDR] JOB_ID [DIR]  take a savepoint of a running job
//	flinkgo stop [--endpoint ADDR] [--savepoint-dir DIR] JOB_ID
//	                                                  stop a job with a savepoint
//	flinkgo cancel [--endpoint ADDR] JOB_ID           cancel a job
//	flinkgo version
//
// ADDR is unix:///path/to.sock or host:port (default 127.0.0.1:7781,
// loopback only). The Python package starts `flinkgo serve` as its embedded
// local runtime; `Environment(endpoint=ADDR)` submits to a server started by
// hand.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"

	"github.com/flinkgo/flinkgo/internal/gctune"
	"github.com/flinkgo/flinkgo/runtime/config"
	"github.com/flinkgo/flinkgo/runtime/job"
	"github.com/flinkgo/flinkgo/runtime/proto/jobpb"
	"github.com/flinkgo/flinkgo/runtime/server"
	"github.com/flinkgo/flinkgo/udf/bridge/pluginrunner"
)

const version = "0.1.0"

// maxMessage bounds job-service messages: plans carry in-memory tables and
// collected rows travel back.
const maxMessage = 1 << 30

func main() {
	gctune.Apply()
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = serve(os.Args[2:])
	case "run":
		err = run(os.Args[2:])
	case "list", "savepoint", "stop", "cancel":
		err = control(os.Args[1], os.Args[2:])
	case "version":
		fmt.Println("flinkgo", version)
	default:
		usage()
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

func usage() {
	fmt.Fprintln(os.Stderr, `usage:
  flinkgo serve [--listen ADDR] [--parent-pid N]
  flinkgo run [--from-savepoint PATH] [--allow-non-restored-state] PIPELINE.py [ARGS...]
  flinkgo list [--endpoint ADDR]
  flinkgo savepoint [--endpoint ADDR] JOB_ID [DIR]
  flinkgo stop [--endpoint ADDR] [--savepoint-dir DIR] JOB_ID
  flinkgo cancel [--endpoint ADDR] JOB_ID
  flinkgo version`)
}

func serve(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	listen := fs.String("listen", "127.0.0.1:7781", "unix:///path.sock or host:port")
	parent := fs.Int("parent-pid", 0, "exit when this process is gone (the embedded runtime's client)")
	_ = fs.Parse(args)
	lis, err := listenOn(*listen)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *parent > 0 {
		ctx = watchParent(ctx, *parent)
	}
	fmt.Printf("flinkgo: serving on %s\n", *listen)
	return serveOn(ctx, lis, nil)
}

func listenOn(addr string) (net.Listener, error) {
	if path, ok := strings.CutPrefix(addr, "unix://"); ok {
		_ = os.Remove(path)
		return net.Listen("unix", path)
	}
	return net.Listen("tcp", addr)
}

// serveOn serves the job service on lis until ctx ends; running jobs are
// canceled then.
func serveOn(ctx context.Context, lis net.Listener, defaults map[string]string) error {
	logger := hclog.New(&hclog.LoggerOptions{Name: "flinkgo", Level: hclog.Warn, Output: os.Stderr})
	srv := grpc.NewServer(grpc.MaxRecvMsgSize(maxMessage), grpc.MaxSendMsgSize(maxMessage))
	jobs := server.New(job.Options{Runner: pluginrunner.Options{Logger: logger}}, defaults)
	jobpb.RegisterJobServiceServer(srv, jobs)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(lis) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		// Stop cancels every Execute call, so every job takes its cancel
		// path; GracefulStop would wait for jobs that may never end.
		srv.Stop()
		<-done
		jobs.Wait()
		return nil
	}
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
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	from := fs.String("from-savepoint", "", "start the jobs from this savepoint or retained checkpoint directory")
	allow := fs.Bool("allow-non-restored-state", false, "start even when the savepoint holds state of an operator the job no longer has")
	_ = fs.Parse(args)
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
	dir, err := os.MkdirTemp("", "flinkgo-run-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "runtime.sock")
	lis, err := net.Listen("unix", sock)
	if err != nil {
		return err
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	served := make(chan error, 1)
	go func() { served <- serveOn(ctx, lis, defaults) }()

	python := os.Getenv(pluginrunner.PythonEnv)
	if python == "" {
		python = "python3"
	}
	cmd := exec.Command(python, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), "FLINKGO_ENDPOINT=unix://"+sock)
	// Ctrl-C reaches the pipeline through the terminal's process group; the
	// client cancels its job and exits.
	signal.Ignore(os.Interrupt)
	err = cmd.Run()
	stop()
	<-served
	return err
}
