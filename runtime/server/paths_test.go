package server

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/flinkgo/flinkgo/runtime/config"
	"github.com/flinkgo/flinkgo/runtime/job"
	"github.com/flinkgo/flinkgo/runtime/proto/jobpb"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
	"github.com/flinkgo/flinkgo/runtime/server/allowpath"
)

func TestClientPathsOutsideTheRootsAreRefused(t *testing.T) {
	root := t.TempDir()
	roots, err := allowpath.New([]string{root})
	if err != nil {
		t.Fatal(err)
	}
	s := New(job.Options{}, nil)
	s.AllowPaths(roots)
	outside := filepath.Join(filepath.Dir(root), "elsewhere")

	fileSource := func(path string) *planpb.Node {
		return &planpb.Node{Id: 1, Name: "read_csv", Kind: &planpb.Node_Source{Source: &planpb.Source{
			Kind: &planpb.Source_File{File: &planpb.FileSource{Format: planpb.FileSource_CSV, Paths: []string{path}}}}}}
	}
	fileSink := func(path string) *planpb.Node {
		return &planpb.Node{Id: 2, Name: "write_csv", Kind: &planpb.Node_Sink{Sink: &planpb.Sink{
			Kind: &planpb.Sink_File{File: &planpb.FileSink{Format: planpb.FileSource_CSV, Path: path}}}}}
	}
	cases := map[string]*planpb.JobPlan{
		"a file source":    {Nodes: []*planpb.Node{fileSource(outside)}},
		"a file sink":      {Nodes: []*planpb.Node{fileSink(outside)}},
		"checkpoints":      {Config: map[string]string{config.ConfigCheckpointDir: outside}},
		"savepoints":       {Config: map[string]string{config.ConfigSavepointDir: outside}},
		"the restore path": {Config: map[string]string{config.ConfigRestorePath: outside}},
	}
	for name, job := range cases {
		resp, err := s.Explain(context.Background(), &jobpb.ExplainRequest{Plan: job})
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{outside, root, "--allow-path"} {
			if !strings.Contains(resp.GetError(), want) {
				t.Errorf("%s outside the roots: the error %q does not name %q", name, resp.GetError(), want)
			}
		}
	}

	inside := &planpb.JobPlan{
		Config: map[string]string{config.ConfigCheckpointDir: filepath.Join(root, "chk")},
		Nodes:  []*planpb.Node{fileSource(filepath.Join(root, "in.csv")), fileSink(filepath.Join(root, "out"))},
	}
	if err := s.checkPaths(inside); err != nil {
		t.Fatalf("paths under the root were refused: %v", err)
	}

	_, err = s.TriggerSavepoint(context.Background(), &jobpb.SavepointRequest{JobId: "any", Directory: outside})
	if status.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), "--allow-path") {
		t.Fatalf("a savepoint directory outside the roots: got %v, want PERMISSION_DENIED naming --allow-path", err)
	}
}

// s3:// checkpoint, savepoint and restore paths are refused unless the
// server allows their bucket prefix.
func TestObjectStoragePathsNeedAnS3Root(t *testing.T) {
	local, err := allowpath.New([]string{t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	withS3, err := allowpath.New([]string{t.TempDir(), "s3://chk/flinkgo"})
	if err != nil {
		t.Fatal(err)
	}
	s := New(job.Options{}, nil)
	for _, key := range []string{config.ConfigCheckpointDir, config.ConfigSavepointDir, config.ConfigRestorePath} {
		plan := &planpb.JobPlan{Config: map[string]string{key: "s3://chk/flinkgo/x"}}
		s.AllowPaths(local)
		if err := s.checkPaths(plan); err == nil || !strings.Contains(err.Error(), "--allow-path s3://") {
			t.Errorf("%s on S3 without an s3 root: %v", key, err)
		}
		s.AllowPaths(withS3)
		if err := s.checkPaths(plan); err != nil {
			t.Errorf("%s under the allowed prefix: %v", key, err)
		}
		plan.Config[key] = "s3://chk/other"
		if err := s.checkPaths(plan); err == nil {
			t.Errorf("%s outside the allowed prefix was accepted", key)
		}
	}
	s.AllowPaths(local)
	_, err = s.TriggerSavepoint(context.Background(), &jobpb.SavepointRequest{JobId: "any", Directory: "s3://chk/flinkgo"})
	if status.Code(err) != codes.PermissionDenied {
		t.Fatalf("an s3 savepoint directory without an s3 root: got %v, want PERMISSION_DENIED", err)
	}
}

// A savepoint directory checked, then swapped for a link to a directory the
// client may not use before the savepoint is written (issue 29, item 5: a
// local user made the server write a savepoint into a root-only directory):
// the server opens the directory from the allowed root, refuses the link and
// writes nothing through it.
func TestASavepointDirectorySwappedForALinkAfterTheCheckIsRefused(t *testing.T) {
	base := t.TempDir()
	root, secret := filepath.Join(base, "allowed"), filepath.Join(base, "secret")
	dir := filepath.Join(root, "savepoints")
	for _, d := range []string{dir, secret} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	roots, err := allowpath.New([]string{root})
	if err != nil {
		t.Fatal(err)
	}
	s := New(job.Options{Stdout: io.Discard}, nil)
	s.AllowPaths(roots)
	s.savepointChecked = func() {
		if err := os.Rename(dir, dir+".old"); err != nil {
			t.Error(err)
		}
		if err := os.Symlink(secret, dir); err != nil {
			t.Error(err)
		}
	}
	client := serveInProcess(t, s, slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	endless := datagenToCollect(t, "endless", 0)
	endless.Nodes[0].GetSource().GetDatagen().RowsPerSecond = 100
	endless.Nodes[1].GetSink().Kind = &planpb.Sink_Print{Print: &planpb.PrintSink{}}
	stream, err := client.Execute(ctx, &jobpb.ExecuteRequest{Plan: endless})
	if err != nil {
		t.Fatal(err)
	}
	var id string
	for id == "" {
		ev, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if f := ev.GetFinished(); f != nil {
			t.Fatalf("the job ended: %v", f)
		}
		id = ev.GetStarted().GetJobId()
	}
	_, err = client.TriggerSavepoint(ctx, &jobpb.SavepointRequest{JobId: id, Directory: dir})
	if status.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), "symbolic link") || !strings.Contains(err.Error(), dir) {
		t.Errorf("the savepoint through the swapped link: got %v, want PERMISSION_DENIED naming the path and the link", err)
	}
	if entries, _ := os.ReadDir(secret); len(entries) != 0 {
		t.Errorf("the savepoint was written through the link: %v", entries)
	}

	// Unswapped, the savepoint is written where asked, and its path is the
	// one the client named, not the descriptor the server wrote through.
	s.savepointChecked = nil
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	resp, err := client.TriggerSavepoint(ctx, &jobpb.SavepointRequest{JobId: id, Directory: dir})
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(resp.GetPath()) != dir {
		t.Fatalf("the savepoint's path %s is not under %s", resp.GetPath(), dir)
	}
	if _, err := os.Stat(filepath.Join(resp.GetPath(), "_metadata")); err != nil {
		t.Fatal(err)
	}
	cancel()
}

// file:///etc/x used to become the relative directory ./file:/etc/x (issue
// 29, item 8): a file: URI names its local path, one of another host is
// refused, on plans and savepoints, and the allow-list checks the path it
// names.
func TestFileURIsNameLocalPaths(t *testing.T) {
	for in, want := range map[string]string{
		"file:///etc/x":               "/etc/x",
		"FILE:///tmp/a%20b":           "/tmp/a b",
		"file://localhost/var/out":    "/var/out",
		"/plain/path":                 "/plain/path",
		"relative/file:x":             "relative/file:x",
		"s3://bucket/file:///not/one": "s3://bucket/file:///not/one",
	} {
		got, err := localPath("the path", in)
		if err != nil || got != want {
			t.Errorf("localPath(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"file://otherhost/x", "file:relative/x", "file:///x?y=1", "file:"} {
		if got, err := localPath("the file sink's path", bad); err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "file:///") {
			t.Errorf("localPath(%q) = %q, %v; want an error naming it and the form to use", bad, got, err)
		}
	}

	root := t.TempDir()
	roots, err := allowpath.New([]string{root})
	if err != nil {
		t.Fatal(err)
	}
	s := New(job.Options{}, nil)
	s.AllowPaths(roots)
	sink := func(path string) *planpb.JobPlan {
		return &planpb.JobPlan{Nodes: []*planpb.Node{{Id: 2, Name: "write_csv", Kind: &planpb.Node_Sink{Sink: &planpb.Sink{
			Kind: &planpb.Sink_File{File: &planpb.FileSink{Format: planpb.FileSource_CSV, Path: path}}}}}}}
	}
	t.Chdir(root) // ./file:/etc/x would lie under the root
	resp, err := s.Explain(context.Background(), &jobpb.ExplainRequest{Plan: sink("file:///etc/x")})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(resp.GetError(), "/etc/x") || !strings.Contains(resp.GetError(), "--allow-path") {
		t.Errorf("file:///etc/x was not checked as /etc/x: %q", resp.GetError())
	}
	inside := sink("file://" + filepath.Join(root, "out"))
	if err := localPaths(inside); err != nil {
		t.Fatal(err)
	}
	if got := inside.Nodes[0].GetSink().GetFile().GetPath(); got != filepath.Join(root, "out") {
		t.Errorf("the sink's path became %q", got)
	}
	_, err = s.TriggerSavepoint(context.Background(), &jobpb.SavepointRequest{JobId: "any", Directory: "file://otherhost/sp"})
	if status.Code(err) != codes.InvalidArgument {
		t.Errorf("a savepoint directory on another host: %v, want INVALID_ARGUMENT", err)
	}
}
