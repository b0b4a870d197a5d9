// Package nexmark is the connector of Nexmark-shaped auction events
// (env.nexmark): kind "nexmark". A source reads the persons, auctions or
// bids among `events` events, in Nexmark's proportions; the events are
// cut into 128 ranges as in-memory tables (runtime/source's RowRanges),
// generated in reader.go.
package nexmark

import (
	"errors"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flinkgo/flinkgo/runtime/connector"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
	"github.com/flinkgo/flinkgo/runtime/source"
)

// Source is the connector of Nexmark events.
func Source() connector.SourceConnector {
	return connector.SourceConnector{Kind: "nexmark", Decode: decode}
}

func decode(wire *planpb.Source) (connector.Source, error) {
	n := wire.GetNexmark()
	if n == nil {
		return nil, errors.New("nexmark: the source is not a Nexmark source")
	}
	return events{n}, nil
}

type events struct{ wire *planpb.NexmarkSource }

// CheckSchema checks the declared columns are those of the events' kind.
func (e events) CheckSchema(s *arrow.Schema) error { return Validate(e.wire, s) }

func (events) Boundedness() connector.Boundedness { return connector.Boundedness{Bounded: true} }

func (e events) Open(cfg connector.ReaderConfig) (connector.Reader, error) {
	cfg = cfg.WithDefaults()
	if err := source.CheckConfig(cfg); err != nil {
		return nil, err
	}
	restore, err := source.RestoreMap(cfg.Restore)
	if err != nil {
		return nil, err
	}
	return openReader(e.wire, cfg, restore)
}
