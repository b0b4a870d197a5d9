package plan

import (
	"fmt"

	"github.com/flinkgo/flinkgo/runtime/config"
)

// Warnings says what in g runs, but likely not as its author meant: a file
// sink of an endless input in a job that never checkpoints publishes its
// part files only at a checkpoint or the job's end, so nothing while the
// job runs (docs/semantics.md#sinks). Explain lists them, and the
// server sends them to the client that submits the job.
func (g *Graph) Warnings() []string {
	interval, _ := config.ParseDuration(g.Config[config.ConfigCheckpointInterval])
	if interval > 0 {
		return nil
	}
	var out []string
	for _, op := range g.Operators {
		if op.Kind != KindSink || op.Node.GetSink().GetFile() == nil || op.Bounded {
			continue
		}
		out = append(out, fmt.Sprintf("file sink %q reads an endless input and the job does not checkpoint: "+
			"its part files are published at a checkpoint or when the job ends, so none while it runs; "+
			"set %s (and %s) to publish them as it goes", op.Name, config.ConfigCheckpointInterval, config.ConfigCheckpointDir))
	}
	return out
}
