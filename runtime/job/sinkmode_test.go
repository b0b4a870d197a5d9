package job

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
)

// withSinkMode sets the mode of g's file sinks.
func withSinkMode(g *plan.Graph, mode planpb.FileSink_Mode) *plan.Graph {
	for _, op := range g.Operators {
		if f := op.Node.GetSink().GetFile(); f != nil {
			f.Mode = mode
		}
	}
	return g
}

func TestFileSinkModesAtSubmission(t *testing.T) {
	out := t.TempDir()
	stale := filepath.Join(out, "part-9.csv")
	if err := os.WriteFile(stale, []byte("id\n999\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	opts := Options{Allocator: mem, SourceBatchRows: 100}

	// error, the default: refused before any task writes.
	_, err := Run(context.Background(), datagenToCSV(t, 10, 0, 1, 2, out, nil), opts)
	if err == nil || !strings.Contains(err.Error(), out) || !strings.Contains(err.Error(), `mode="overwrite"`) {
		t.Fatalf("a non-empty directory in mode error: %v", err)
	}
	if names, _ := os.ReadDir(out); len(names) != 1 {
		t.Fatalf("a refused job wrote into %s: %v", out, names)
	}

	// overwrite with checkpoints: the stale file goes once the output is
	// committed, and the new rows are all there, once.
	g := withSinkMode(datagenToCSV(t, 2000, 10000, 2, 2, out, checkpointConfig(t.TempDir())), planpb.FileSink_OVERWRITE)
	j, err := Start(context.Background(), g, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Wait(); err != nil {
		t.Fatal(err)
	}
	wantExactly(t, committedIDs(t, out), 2000)

	// append without checkpoints: both runs' rows, nothing replaced.
	if _, err := Run(context.Background(), withSinkMode(datagenToCSV(t, 10, 0, 1, 2, out, nil), planpb.FileSink_APPEND), opts); err != nil {
		t.Fatal(err)
	}
	ids := committedIDs(t, out)
	if len(ids) != 2010 {
		t.Fatalf("after append %d rows are published, want 2010", len(ids))
	}
	for i, id := range ids[:20] { // sorted: 0..9 of both runs, twice each
		if id != int64(i/2) {
			t.Fatalf("after append the smallest ids are %v, want 0, 0, 1, 1, ..., 9, 9", ids[:20])
		}
	}
}
