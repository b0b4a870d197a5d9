package source

import (
	"errors"

	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
)

// Open opens the reader of any source of this package, for its tests
// (the runtime opens sources through their connectors).
func Open(src *planpb.Source, cfg Config) (Reader, error) {
	switch k := src.GetKind().(type) {
	case *planpb.Source_Arrow:
		return OpenArrow(k.Arrow, cfg)
	case *planpb.Source_File:
		return OpenFiles(k.File, cfg)
	}
	return nil, errors.New("source: the source node has no kind")
}
