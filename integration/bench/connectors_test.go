package bench

import (
	"github.com/flinkgo/flinkgo/connectors/builtin"
	"github.com/flinkgo/flinkgo/runtime/plan"
)

// The tests plan with the runtime's connectors.
func init() { plan.DefaultConnectors = builtin.Registry() }
