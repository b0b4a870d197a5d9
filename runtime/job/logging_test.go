package job

import (
	"context"
	"errors"
	"github.com/flinkgo/flinkgo/runtime/config"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/internal/logging/logtest"
	"github.com/flinkgo/flinkgo/runtime/plan"
)

func debugLogger(b *logtest.Buffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// A job whose sink fails once restarts: the restart is logged at warn with
// its cause and the job's id, and every state change at info.
func TestRestartIsLoggedWithItsCause(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	g := datagenToCollect(t, 1000)
	g.Config = map[string]string{config.ConfigRestartStrategy: "fixed-delay", config.ConfigFixedDelayAttempts: "1", config.ConfigFixedDelay: "10 ms"}
	var logs logtest.Buffer
	var failed atomic.Bool
	j, err := Start(context.Background(), g, Options{Allocator: mem, Logger: debugLogger(&logs),
		Collect: func(_ *plan.Operator, _ int, b arrow.RecordBatch) error {
			b.Release()
			if failed.CompareAndSwap(false, true) {
				return errors.New("injected sink failure")
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Wait(); err != nil {
		t.Fatal(err)
	}
	if j.Attempts() != 2 {
		t.Fatalf("%d attempts; want one restart", j.Attempts())
	}
	restarts := logs.Lines("level=WARN", `msg="job restarting after a failure"`)
	if len(restarts) != 1 {
		t.Fatalf("want one restart record, got %d:\n%s", len(restarts), logs.String())
	}
	for _, want := range []string{"injected sink failure", `operator \"collect\"`, "job=" + j.ID()} {
		if !strings.Contains(restarts[0], want) {
			t.Errorf("restart record lacks %q: %s", want, restarts[0])
		}
	}
	for _, s := range []JobState{Running, Restarting, Finished} {
		if len(logs.Lines("level=INFO", `msg="job state changed"`, "state="+s.String(), "name=lifecycle", "job="+j.ID())) == 0 {
			t.Errorf("no info record of the change to %s:\n%s", s, logs.String())
		}
	}
}

// A checkpoint that fails is logged at warn with its cause.
func TestCheckpointFailureIsLogged(t *testing.T) {
	file := filepath.Join(t.TempDir(), "not-a-dir")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	cfg := checkpointConfig(filepath.Join(file, "checkpoints"), config.ConfigCreateDirsOnCheckpoint, "true", config.ConfigRestartStrategy, "none")
	var logs logtest.Buffer
	j, err := Start(context.Background(), datagenToCSV(t, 0, 1000, 1, 1, t.TempDir(), cfg), Options{Allocator: mem, Logger: debugLogger(&logs)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Wait(); err == nil {
		t.Fatal("the job did not fail")
	}
	if got := logs.Lines("level=WARN", `msg="checkpoint failed"`, "not a directory", "id=1"); len(got) != 1 {
		t.Errorf("want one warn record of checkpoint 1's failure with its cause:\n%s", logs.String())
	}
	if len(logs.Lines("level=INFO", "state=FAILED")) != 1 {
		t.Errorf("the job's failure was not logged:\n%s", logs.String())
	}
}

// A completed checkpoint is logged at debug with its id and path.
func TestCheckpointCompletionIsLogged(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	var logs logtest.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	j, err := Start(ctx, datagenToCSV(t, 0, 1000, 1, 1, t.TempDir(), checkpointConfig(t.TempDir())), Options{Allocator: mem, Logger: debugLogger(&logs)})
	if err != nil {
		t.Fatal(err)
	}
	waitForCheckpoints(t, j, 1)
	cancel()
	_, _ = j.Wait()
	for _, c := range j.Checkpoints() {
		if c.Status != "completed" {
			continue
		}
		id := "id=" + strconv.FormatInt(c.ID, 10)
		if got := logs.Lines("level=DEBUG", `msg="checkpoint completed"`, id+" ", "path="+c.Path); len(got) != 1 {
			t.Errorf("want one debug record of checkpoint %d at %s:\n%s", c.ID, c.Path, logs.String())
		}
	}
}
