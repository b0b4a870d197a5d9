package server

import (
	"fmt"
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
