package server

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/flinkgo/flinkgo/internal/beneath"
	"github.com/flinkgo/flinkgo/internal/objstore"
	"github.com/flinkgo/flinkgo/runtime/config"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
	"github.com/flinkgo/flinkgo/runtime/server/allowpath"
)

// AllowPaths restricts the paths that clients choose (file sources and
// sinks, checkpoint, savepoint and restore paths) to roots; call it before
// serving. A server that was not given roots allows any path.
func (s *Server) AllowPaths(roots *allowpath.Roots) {
	s.paths = roots
	s.jobOptions.Paths = nil
	if roots != nil && !roots.AllowsAny() {
		s.jobOptions.Paths = roots
	}
}

// pinSavepointDir opens the local savepoint directory dir (the job's
// configured one when empty) from the allowed directory it lies under and
// keeps it open until the job ends, for the job's tasks to write the
// savepoint through (see beneath.Dir): a link swapped in after the check
// cannot redirect it. It returns nil when every path is allowed or dir is
// object storage.
func (s *Server) pinSavepointDir(jobID, dir string) (*beneath.Dir, error) {
	if s.paths == nil || s.paths.AllowsAny() {
		return nil, nil
	}
	s.mu.Lock()
	r := s.mu.jobs[jobID]
	s.mu.Unlock()
	if r == nil {
		return nil, status.Errorf(codes.NotFound, "no running job has the id %q", jobID)
	}
	if strings.TrimSpace(dir) == "" {
		dir = r.config[config.ConfigSavepointDir]
	}
	dir = strings.TrimSpace(dir)
	if dir == "" || objstore.IsURL(dir) {
		return nil, nil
	}
	pin, err := s.paths.Dir("the savepoint directory", dir, true)
	if err != nil {
		return nil, status.Error(codes.PermissionDenied, err.Error())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.jobs[jobID] != r {
		_ = pin.Close()
		return nil, status.Errorf(codes.NotFound, "no running job has the id %q", jobID)
	}
	r.pins = append(r.pins, pin)
	return pin, nil
}

// checkPath checks one client-chosen path; what says what it is for.
func (s *Server) checkPath(what, path string) error {
	if s.paths == nil || strings.TrimSpace(path) == "" {
		return nil
	}
	return s.paths.Check(what, strings.TrimSpace(path))
}

// checkPaths checks every path of a plan: the path-typed config entries
// and the file sources' and sinks' paths.
func (s *Server) checkPaths(job *planpb.JobPlan) error {
	if s.paths == nil || s.paths.AllowsAny() {
		return nil
	}
	known := config.Known()
	for key, value := range job.GetConfig() {
		if k, ok := known.Lookup(key); ok && k.Type == config.TypePath {
			if err := s.checkPath("the config entry "+key+" =", value); err != nil {
				return err
			}
		}
	}
	for _, n := range job.GetNodes() {
		if f := n.GetSource().GetFile(); f != nil {
			for _, p := range f.GetPaths() {
				if err := s.checkPath(fmt.Sprintf("the file source %q (node %d) reads the path", n.GetName(), n.GetId()), p); err != nil {
					return err
				}
			}
		}
		if f := n.GetSink().GetFile(); f != nil {
			if err := s.checkPath(fmt.Sprintf("the file sink %q (node %d) writes the path", n.GetName(), n.GetId()), f.GetPath()); err != nil {
				return err
			}
		}
	}
	return nil
}

// localPaths turns the file: URIs among a plan's local paths (file
// sources and sinks, path-typed config entries) into the paths they name;
// see localPath.
func localPaths(job *planpb.JobPlan) error {
	known := config.Known()
	for key, value := range job.GetConfig() {
		if k, ok := known.Lookup(key); ok && k.Type == config.TypePath {
			p, err := localPath("the config entry "+key+" =", value)
			if err != nil {
				return err
			}
			job.Config[key] = p
		}
	}
	for _, n := range job.GetNodes() {
		if f := n.GetSource().GetFile(); f != nil {
			for i, p := range f.GetPaths() {
				local, err := localPath(fmt.Sprintf("the file source %q (node %d) reads the path", n.GetName(), n.GetId()), p)
				if err != nil {
					return err
				}
				f.Paths[i] = local
			}
		}
		if f := n.GetSink().GetFile(); f != nil {
			local, err := localPath(fmt.Sprintf("the file sink %q (node %d) writes the path", n.GetName(), n.GetId()), f.GetPath())
			if err != nil {
				return err
			}
			f.Path = local
		}
	}
	return nil
}

// localPath is p, or the absolute local path a file: URI names
// (file:///abs/path or file://localhost/abs/path, percent-decoded). Taken
// as a path, "file:///etc/x" would be the relative directory "file:/etc/x"
// under the working directory. A file: URI of another host, or one that
// is not absolute, is refused.
func localPath(what, p string) (string, error) {
	trimmed := strings.TrimSpace(p)
	if len(trimmed) < len("file:") || !strings.EqualFold(trimmed[:len("file:")], "file:") {
		return p, nil
	}
	u, err := url.Parse(trimmed)
	if err == nil && (u.Host != "" && u.Host != "localhost" || u.Opaque != "" || !strings.HasPrefix(u.Path, "/") || u.RawQuery != "" || u.Fragment != "") {
		err = errors.New("only file:///absolute/path (or file://localhost/absolute/path) names a local path")
	}
	if err != nil {
		return "", fmt.Errorf("%s %q is not a local file URI: %w; give a plain path, or file:///absolute/path", what, p, err)
	}
	return u.Path, nil
}
