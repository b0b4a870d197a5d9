// Package builtin returns the registry of the runtime's connectors: one
// line per connector package.
package builtin

import (
	"github.com/flinkgo/flinkgo/connectors/collect"
	"github.com/flinkgo/flinkgo/connectors/datagen"
	"github.com/flinkgo/flinkgo/connectors/files"
	"github.com/flinkgo/flinkgo/connectors/kafka"
	"github.com/flinkgo/flinkgo/connectors/memory"
	"github.com/flinkgo/flinkgo/connectors/nexmark"
	"github.com/flinkgo/flinkgo/connectors/print"
	"github.com/flinkgo/flinkgo/runtime/connector"
)

// Registry returns the runtime's connectors.
func Registry() *connector.Registry {
	r, err := connector.NewRegistry(
		[]connector.SourceConnector{memory.Source(), files.Source(), datagen.Source(), nexmark.Source(), kafka.Source()},
		[]connector.SinkConnector{print.Sink(), collect.Sink(), files.Sink(), kafka.Sink()},
	)
	if err != nil {
		panic(err) // the table above is wrong: a bug, caught by every test
	}
	return r
}
