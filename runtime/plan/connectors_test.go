package plan

import "github.com/flinkgo/flinkgo/connectors/builtin"

// The planner's tests plan with the runtime's connectors.
func init() { DefaultConnectors = builtin.Registry() }
