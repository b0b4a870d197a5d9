package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"google.golang.org/grpc"

	"github.com/flinkgo/flinkgo/runtime/proto/jobpb"
	"github.com/flinkgo/flinkgo/runtime/server/listen"
)

// control runs the commands that talk to a running server: list,
// savepoint, stop and cancel.
func control(cmd string, args []string) error {
	fs := flag.NewFlagSet(cmd, flag.ExitOnError)
	endpoint := fs.String("endpoint", os.Getenv("FLINKGO_ENDPOINT"), "the server: unix:///path.sock or host:port (default $FLINKGO_ENDPOINT, else "+listen.DefaultAddress()+")")
	savepointDir := fs.String("savepoint-dir", "", "stop: where the savepoint goes (default: the job's execution.checkpointing.savepoint-dir)")
	var cred credentialFlags
	cred.register(fs)
	_ = fs.Parse(args)
	args = fs.Args()
	if *endpoint == "" {
		*endpoint = listen.DefaultAddress()
	}
	opts, err := cred.dialOptions(*endpoint)
	if err != nil {
		return err
	}
	target := *endpoint
	if !strings.HasPrefix(target, "unix://") {
		target = "passthrough:///" + target
	}
	conn, err := grpc.NewClient(target, opts...)
	if err != nil {
		return fmt.Errorf("connecting to %s: %w", *endpoint, err)
	}
	defer conn.Close()
	client := jobpb.NewJobServiceClient(conn)
	// A savepoint of a large state takes time; the others answer at once.
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()

	needID := func(max int) (string, error) {
		if len(args) < 1 || len(args) > max {
			usage()
			return "", fmt.Errorf("%s needs a job id (see flinkgo list)", cmd)
		}
		return args[0], nil
	}
	switch cmd {
	case "list":
		resp, err := client.ListJobs(ctx, &jobpb.ListJobsRequest{})
		if err != nil {
			return fmt.Errorf("listing the jobs of %s: %w", *endpoint, err)
		}
		w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "JOB ID\tSTATE\tSECONDS\tNAME")
		for _, j := range resp.GetJobs() {
			fmt.Fprintf(w, "%s\t%s\t%.0f\t%s\n", j.GetJobId(), strings.TrimPrefix(j.GetState().String(), "JOB_STATE_"), j.GetElapsedSeconds(), j.GetName())
		}
		return w.Flush()
	case "savepoint", "stop":
		id, err := needID(2)
		if err != nil {
			return err
		}
		dir := *savepointDir
		if cmd == "savepoint" && len(args) == 2 {
			dir = args[1]
		}
		resp, err := client.TriggerSavepoint(ctx, &jobpb.SavepointRequest{JobId: id, Directory: dir, Stop: cmd == "stop"})
		if err != nil {
			return fmt.Errorf("savepoint of job %s: %w", id, err)
		}
		fmt.Println(resp.GetPath())
		return nil
	case "cancel":
		id, err := needID(1)
		if err != nil {
			return err
		}
		resp, err := client.Cancel(ctx, &jobpb.CancelRequest{JobId: id})
		if err != nil {
			return fmt.Errorf("canceling job %s: %w", id, err)
		}
		if !resp.GetFound() {
			return errors.New("no running job has the id " + id)
		}
		return nil
	}
	return fmt.Errorf("unknown command %q", cmd)
}
