package job

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/internal/logging/logtest"
)

// Tasks and sinks log their lifecycle (issue 24, item 5d: neither logged
// anything): each task's start and end at debug under one identity, the
// job, attempt, vertex, operator, uid and subtask, a file sink's
// precommits and commits at debug; each checkpoint's trigger at debug (its
// end was logged by the job already).
func TestCheckpointsAndTasksLogTheirLifecycle(t *testing.T) {
	dir, out := t.TempDir(), t.TempDir()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	log, logs := logtest.New()
	j, err := Start(context.Background(), keyedSums(t, 20000, 10000, 2, out, checkpointConfig(dir)), Options{Allocator: mem, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	waitForCheckpoints(t, j, 1)
	if _, err := j.Wait(); err != nil {
		t.Fatal(err)
	}
	for _, c := range j.Checkpoints() {
		want := []string{"level=DEBUG", "checkpoint triggered", fmt.Sprintf("checkpoint=%d ", c.ID), "job=" + j.ID()}
		if len(logs.Lines(want...)) != 1 {
			t.Errorf("checkpoint %d: no one line holding %q in\n%s", c.ID, want, logs)
		}
	}
	for i := range 2 { // the file sink's subtasks: what they precommit and commit
		for _, event := range []string{"sink precommitted", "sink committed"} {
			if len(logs.Lines("level=DEBUG", event, "uid=files", fmt.Sprintf("subtask=%d ", i))) == 0 {
				t.Errorf("no %q line of the file sink's subtask %d in\n%s", event, i, logs)
			}
		}
	}
	g := j.graph()
	for _, op := range g.Operators {
		if in := g.Inputs(op.ID); len(in) == 1 && g.Operators[in[0].From].ChainID == op.ChainID {
			continue // chained: its task is its chain head's
		}
		for i := range op.Parallelism {
			for _, event := range []string{"task running", "task finished"} {
				want := fmt.Sprintf("msg=%q job=%s attempt=1 vertex=%d operator=%s uid=%s subtask=%d", event, j.ID(), op.ID, op.Name, op.UID, i)
				n := 0
				for _, line := range logs.Lines("level=DEBUG", want) {
					if strings.HasSuffix(line, want) {
						n++
					}
				}
				if n != 1 {
					t.Errorf("%d lines ending %q, want 1, in\n%s", n, want, logs)
				}
			}
		}
	}
}
