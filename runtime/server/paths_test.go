package server

import (
	"context"
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
