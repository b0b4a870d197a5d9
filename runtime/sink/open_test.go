package sink

import (
	"errors"

	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
)

// Open opens the writer of any sink of this package, for its tests (the
// runtime opens sinks through their connectors).
func Open(s *planpb.Sink, cfg Config) (Writer, error) {
	switch k := s.GetKind().(type) {
	case *planpb.Sink_File:
		return OpenFile(k.File, cfg)
	}
	return nil, errors.New("sink: the sink node has no kind")
}
