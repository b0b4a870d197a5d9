package job

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/runtime/checkpoint"
	"github.com/flinkgo/flinkgo/runtime/config"
)

// With unaligned checkpoints, a job canceled with retained checkpoints and
// restored from the latest at the same parallelism commits every row
// exactly once; its checkpoints are marked unaligned.
func TestUnalignedCheckpointsRestoreExactlyOnce(t *testing.T) {
	dir, out := t.TempDir(), t.TempDir()
	const rows = 30000
	cfg := checkpointConfig(dir, config.ConfigCheckpointRetention, config.RetainOnCancellation,
		config.ConfigUnalignedCheckpoints, "true")
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	cfg[config.ConfigRestorePath] = cancelAfterCheckpoints(t, rows, out, cfg, mem)
	j2, err := Start(context.Background(), datagenToCSV(t, rows, 10000, 2, 2, out, cfg), Options{Allocator: mem, SourceBatchRows: 500})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j2.Wait(); err != nil {
		t.Fatal(err)
	}
	wantExactly(t, committedIDs(t, out), rows)
}

// A restore at another parallelism from a checkpoint holding channel
// state is refused, naming the checkpoint and the way out (an aligned
// savepoint); at the same parallelism it is allowed.
func TestRescalingFromChannelStateIsRefused(t *testing.T) {
	m := &Metadata{CheckpointID: 7, MaxParallelism: 128, Operators: []checkpoint.OperatorState{{
		UID: "files", Name: "write_csv", Kind: "sink", Parallelism: 2,
		Subtasks: []checkpoint.SubtaskState{{Subtask: 0, Inputs: &checkpoint.InputChannels{Producers: 2,
			Channels: []checkpoint.ChannelState{{Producer: 1, File: "chk-7/channel-state/files-0-channel-1.arrow", Batches: 1, Rows: 10, Bytes: 100}}}}},
	}}}
	out := t.TempDir()
	if err := checkRestore(datagenToCSV(t, 10, 0, 2, 2, out, nil), m, config.RestoreConfig{}); err != nil {
		t.Fatalf("same parallelism: %v", err)
	}
	err := checkRestore(datagenToCSV(t, 10, 0, 2, 3, out, nil), m, config.RestoreConfig{})
	if err == nil {
		t.Fatal("a restore at another parallelism from channel state was accepted")
	}
	for _, want := range []string{"checkpoint 7 is unaligned", "channel state", `"write_csv" had 2, now 3`, "savepoint"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}
