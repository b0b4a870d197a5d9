package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"google.golang.org/grpc"

	"github.com/flinkgo/flinkgo/runtime/job"
	"github.com/flinkgo/flinkgo/runtime/proto/jobpb"
	"github.com/flinkgo/flinkgo/runtime/server/listen"
)

// control runs the commands that talk to a running server: list,
// savepoint, stop, rescale and cancel.
func control(cmd string, args []string) error {
	fs := newFlagSet(cmd, args)
	endpoint := fs.String("endpoint", os.Getenv("FLINKGO_ENDPOINT"), "the server: unix:///path.sock or host:port (default $FLINKGO_ENDPOINT, else "+listen.DefaultAddress()+")")
	savepointDir := fs.String("savepoint-dir", "", "stop: where the savepoint goes (default: the job's execution.checkpointing.savepoint-dir)")
	all := fs.Bool("all", false, "list: also the jobs that ended (the server keeps the latest 100), as Flink's `flink list --all`")
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
		resp, err := client.ListJobs(ctx, &jobpb.ListJobsRequest{IncludeEnded: *all})
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
	case "rescale":
		if len(args) < 1 {
			usage()
			return errors.New("rescale needs a job id (see flinkgo list), then uid=N for each operator to rescale")
		}
		return rescale(ctx, client, args[0], args[1:])
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

// rescale asks job id to rescale to the uid=N of args, then prints its
// rescale history; without args it prints the history only.
func rescale(ctx context.Context, client jobpb.JobServiceClient, id string, args []string) error {
	want := map[string]int32{}
	for _, a := range args {
		uid, n, ok := strings.Cut(a, "=")
		p, err := strconv.Atoi(strings.TrimSpace(n))
		if !ok || uid == "" || err != nil || p < 1 {
			return fmt.Errorf("rescale: %q is not uid=N with N a parallelism of at least 1", a)
		}
		want[uid] = int32(p)
	}
	var resp *jobpb.RescaleResponse
	var err error
	if len(want) == 0 {
		resp, err = client.RescaleHistory(ctx, &jobpb.RescaleHistoryRequest{JobId: id})
	} else {
		resp, err = client.Rescale(ctx, &jobpb.RescaleRequest{JobId: id, Parallelism: want})
	}
	if err != nil {
		return fmt.Errorf("rescaling job %s: %w", id, err)
	}
	if r := resp.GetRescale(); r != nil {
		fmt.Printf("rescale %s: %s", r.GetId(), r.GetStatus())
		if r.GetReason() != "" {
			fmt.Printf(" (%s)", r.GetReason())
		}
		if r.GetMode() == job.ModeInPlace {
			fmt.Println("; the UDF operators' worker pools are resized in place, without a restart")
		} else {
			fmt.Println("; the job rescales at its next completed checkpoint")
		}
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "RESCALE\tSTATUS\tTRIGGER\tCHECKPOINT\tSECONDS\tPARALLELISM")
	for _, r := range resp.GetHistory() {
		var changes []string
		for _, v := range r.GetVertices() {
			if v.GetBefore() != v.GetAfter() {
				changes = append(changes, fmt.Sprintf("%s %d->%d", v.GetUid(), v.GetBefore(), v.GetAfter()))
			}
			if v.GetWorkersBefore() != v.GetWorkersAfter() && v.GetBefore() == v.GetAfter() {
				changes = append(changes, fmt.Sprintf("%s workers %d->%d", v.GetUid(), v.GetWorkersBefore(), v.GetWorkersAfter()))
			}
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%.3f\t%s\n", r.GetId(), r.GetStatus(), r.GetTrigger(), r.GetCheckpointId(),
			r.GetDurationSeconds(), strings.Join(changes, ", "))
	}
	return w.Flush()
}
