// Package datagen is the connector of generated rows (env.datagen): kind
// "datagen". Bounded with rows > 0 (cut into 128 ranges, as in-memory
// tables), endless otherwise (128 lanes, lane k going to subtask k mod p);
// rows_per_second limits the rate, and the rows behind it are the reader's
// pending records (reader.go).
package datagen

import (
	"errors"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flinkgo/flinkgo/runtime/connector"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
	"github.com/flinkgo/flinkgo/runtime/source"
)

// Source is the connector of generated rows.
func Source() connector.SourceConnector {
	return connector.SourceConnector{Kind: "datagen", Decode: decode}
}

func decode(wire *planpb.Source) (connector.Source, error) {
	g := wire.GetDatagen()
	if g == nil {
		return nil, errors.New("datagen: the source is not a generator")
	}
	return generator{g}, nil
}

type generator struct{ wire *planpb.DatagenSource }

// CheckSchema accepts any schema: the reader refuses a column type it
// cannot generate, and a negative row count or rate, when it opens.
func (generator) CheckSchema(*arrow.Schema) error { return nil }

func (g generator) Boundedness() connector.Boundedness {
	return connector.Boundedness{Bounded: g.wire.GetRows() > 0, WhyEndless: "datagen without rows="}
}

func (g generator) Open(cfg connector.ReaderConfig) (connector.Reader, error) {
	cfg = cfg.WithDefaults()
	if err := source.CheckConfig(cfg); err != nil {
		return nil, err
	}
	restore, err := source.RestoreMap(cfg.Restore)
	if err != nil {
		return nil, err
	}
	return openReader(g.wire, cfg, restore)
}
