// Package memory is the connector of in-memory tables shipped in the plan
// (from_pandas, from_arrow): kind "arrow". The table's rows are cut into
// 128 ranges, range k going to subtask k*p/128, each range's position a
// split state (package runtime/source has the reader and the ranges).
package memory

import (
	"errors"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flinkgo/flinkgo/runtime/connector"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
	"github.com/flinkgo/flinkgo/runtime/source"
)

// Source is the connector of in-memory tables.
func Source() connector.SourceConnector {
	return connector.SourceConnector{Kind: "arrow", Decode: decode}
}

func decode(wire *planpb.Source) (connector.Source, error) {
	t := wire.GetArrow()
	if t == nil {
		return nil, errors.New("memory: the source is not an in-memory table")
	}
	return table{t}, nil
}

type table struct{ wire *planpb.ArrowSource }

// CheckSchema accepts any schema: the reader checks the table's own
// against it when it opens (the table is decoded once, there).
func (table) CheckSchema(*arrow.Schema) error { return nil }

func (table) Boundedness() connector.Boundedness { return connector.Boundedness{Bounded: true} }

func (t table) Open(cfg connector.ReaderConfig) (connector.Reader, error) {
	return source.OpenArrow(t.wire, cfg)
}
