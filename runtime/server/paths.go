package server

import (
	"fmt"
	"strings"

	"github.com/flinkgo/flinkgo/runtime/config"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
	"github.com/flinkgo/flinkgo/runtime/server/allowpath"
)

// AllowPaths restricts the paths that clients choose (file sources and
// sinks, checkpoint, savepoint and restore paths) to roots; call it before
// serving. A server that was not given roots allows any path.
func (s *Server) AllowPaths(roots *allowpath.Roots) { s.paths = roots }

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
