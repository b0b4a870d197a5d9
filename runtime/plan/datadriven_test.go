package plan

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
	"github.com/flinkgo/flinkgo/runtime/rowkind"
)

// TestDataDriven runs the golden files of testdata/: each case is a job
// plan as the client sends it (the wire form, in protojson), decoded and
// planned as the server does, and what the planner made of it:
//
//	explain [parallelism=<n>] [rescale=<uid>:<p>]: Graph.Explain(), or the
//	    planning error
//	changelog: each operator's output stream (append-only, upsert by its
//	    key, retract) and where it comes from, or the planning error
//
// Regenerate the expected output with `go test ./runtime/plan -run
// DataDriven -rewrite`, and review the diff.
func TestDataDriven(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			var wire planpb.JobPlan
			if err := protojson.Unmarshal([]byte(d.Input), &wire); err != nil {
				d.Fatalf(t, "the input is not a job plan in protojson: %v", err)
			}
			opts := Options{}
			for _, arg := range d.CmdArgs {
				switch arg.Key {
				case "parallelism":
					n, err := strconv.Atoi(arg.SingleVal(t))
					if err != nil {
						d.Fatalf(t, "parallelism=%s: %v", arg.SingleVal(t), err)
					}
					opts.DefaultParallelism = n
				case "rescale":
					uid, p, ok := strings.Cut(arg.SingleVal(t), ":")
					n, err := strconv.Atoi(p)
					if !ok || err != nil {
						d.Fatalf(t, "rescale=%s: want <uid>:<parallelism>", arg.SingleVal(t))
					}
					if opts.Parallelism == nil {
						opts.Parallelism = map[string]int{}
					}
					opts.Parallelism[uid] = n
				default:
					d.Fatalf(t, "unknown argument %s", arg.Key)
				}
			}
			g, err := PlanWire(&wire, opts)
			if err != nil {
				// One problem per line, for the reader.
				return "error: " + strings.ReplaceAll(err.Error(), "; ", ";\n  ") + "\n"
			}
			switch d.Cmd {
			case "explain":
				return g.Explain()
			case "changelog":
				var sb strings.Builder
				for _, op := range g.Operators {
					fmt.Fprintf(&sb, "#%d %s %q: %s", op.ID, op.Kind, op.Name, rowkind.Describe(op.Changelog, op.UpsertKey))
					if op.Changelog.IsChangelog() && op.ChangelogFrom != op.ID {
						fmt.Fprintf(&sb, " from #%d", op.ChangelogFrom)
					}
					if op.DropUpdateBefore {
						sb.WriteString(", drops -U")
					}
					sb.WriteString("\n")
				}
				return sb.String()
			}
			d.Fatalf(t, "unknown command %s", d.Cmd)
			return ""
		})
	})
}
