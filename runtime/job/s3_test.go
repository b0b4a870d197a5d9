package job

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/integration/testkit"
	"github.com/flinkgo/flinkgo/internal/objstore"
	"github.com/flinkgo/flinkgo/internal/poll"
	"github.com/flinkgo/flinkgo/runtime/checkpoint"
	"github.com/flinkgo/flinkgo/runtime/config"
	"github.com/flinkgo/flinkgo/runtime/plan"
)

// s3Config starts a real S3 API server (moto) with a bucket and returns
// the checkpoint config of a job checkpointing into s3://chk/flinkgo, with
// the s3.* keys pointing at it, and a client to inspect the bucket.
func s3Config(t *testing.T, extra ...string) (map[string]string, *testkit.S3Server, *objstore.S3) {
	t.Helper()
	srv := testkit.StartS3(t)
	objstore.ResetForTests()
	t.Cleanup(objstore.ResetForTests)
	client, err := objstore.NewS3(t.Context(), objstore.Options{Endpoint: srv.Endpoint, Region: testkit.S3Region,
		AccessKey: testkit.S3AccessKey, SecretKey: testkit.S3SecretKey, PathStyle: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := client.CreateBucket(t.Context(), "chk"); err != nil {
		t.Fatal(err)
	}
	cfg := checkpointConfig("s3://chk/flinkgo", append([]string{
		config.ConfigS3Endpoint, srv.Endpoint, config.ConfigS3Region, testkit.S3Region,
		config.ConfigS3AccessKey, testkit.S3AccessKey, config.ConfigS3SecretKey, testkit.S3SecretKey,
		config.ConfigS3PathStyle, "true",
	}, extra...)...)
	return cfg, srv, client
}

// bucketKeys lists the keys under s3://chk/<prefix>/, relative to it.
func bucketKeys(t *testing.T, c *objstore.S3, prefix string) []string {
	t.Helper()
	objs, err := c.List(t.Context(), "s3://chk/"+prefix+"/")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range objs {
		keys = append(keys, strings.TrimPrefix(o.URL, "s3://chk/"+prefix+"/"))
	}
	return keys
}

// A keyed aggregation checkpointing into S3 is canceled; the bucket then
// holds exactly the objects its two retained checkpoints reference, and a
// fresh job (fresh local directories) restored from the latest gives the
// results of an uninterrupted run.
func TestKeyedJobCheckpointsToS3AndRestores(t *testing.T) {
	cfg, _, client := s3Config(t, config.ConfigCheckpointRetention, config.RetainOnCancellation)
	const rows = 200_000
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	out := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	j, err := Start(ctx, keyedSums(t, rows, 20000, 2, out, cfg), Options{Allocator: mem, SourceBatchRows: 500, KeyedCacheGroups: 4})
	if err != nil {
		t.Fatal(err)
	}
	waitForCheckpoints(t, j, 4)
	cancel()
	if _, err := j.Wait(); err == nil {
		t.Fatal("canceled job returned no error")
	}

	root := "flinkgo/" + j.ID()
	keys := bucketKeys(t, client, root)
	var metas []string
	for _, k := range keys {
		if strings.HasSuffix(k, "/_metadata") {
			metas = append(metas, k)
		}
	}
	if len(metas) != 2 {
		t.Fatalf("retained %v, want 2 checkpoints", metas)
	}
	// Exactly the referenced objects: the _metadata files and every file
	// of their keyed state handles (shared sstables and private files).
	want := map[string]bool{}
	var latest string
	var latestID int64
	for _, meta := range metas {
		m, _, err := LoadMetadata("s3://chk/" + root + "/" + meta)
		if err != nil {
			t.Fatal(err)
		}
		want[meta] = true
		hs, err := checkpoint.KeyedHandles(m)
		if err != nil || len(hs) != 2 {
			t.Fatalf("keyed handles %v: %v", hs, err)
		}
		for _, h := range hs {
			for _, f := range h.Files {
				want[f.Path] = true
			}
		}
		if m.CheckpointID > latestID {
			latestID, latest = m.CheckpointID, "s3://chk/"+root+"/"+strings.TrimSuffix(meta, "/_metadata")
		}
	}
	if wantKeys := slices.Sorted(maps.Keys(want)); !slices.Equal(keys, wantKeys) {
		t.Fatalf("bucket holds\n%v\nthe retained checkpoints reference\n%v", keys, wantKeys)
	}
	if got := keyedResults(t, out); len(got) != 0 {
		t.Fatalf("a bounded aggregation emits at the end of its input, not before: %v", got)
	}

	// Another runtime: the process-wide client is dropped and rebuilt
	// from the restored job's config.
	objstore.ResetForTests()
	cfg[config.ConfigRestorePath] = latest
	delete(cfg, config.ConfigCheckpointRetention)
	// The planner reads the snapshot's max parallelism from S3 before the
	// job starts, with the client the job's s3.* keys configure.
	if opts, err := PlanOptions(&plan.JobPlan{Name: "keyed", Config: cfg}); err != nil || opts.RestoredMaxParallelism == 0 {
		t.Fatalf("planning the restore from %s: %+v, %v", latest, opts, err)
	}
	j2, err := Start(context.Background(), keyedSums(t, rows, 0, 3, out, cfg), Options{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j2.Wait(); err != nil {
		t.Fatal(err)
	}
	wantKeyedResults(t, rows, keyedResults(t, out))
	if keys := bucketKeys(t, client, "flinkgo/"+j2.ID()); len(keys) != 0 {
		t.Errorf("a finished job's checkpoints are deleted; left %v", keys)
	}
}

// An S3 outage fails the checkpoints taken during it, within
// tolerable-failed-checkpoints, and nothing else: the job runs on,
// checkpoints again once the store is back and gives the right results
// without a restart.
func TestS3OutageFailsOnlyThatCheckpoint(t *testing.T) {
	cfg, srv, _ := s3Config(t, config.ConfigTolerableFailures, "1000")
	// 20 s of input at 20000 rows/s: room for the SDK's retries during the
	// outage and a checkpoint after it before the bounded source ends.
	const rows = 400_000
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	out := t.TempDir()
	j, err := Start(context.Background(), keyedSums(t, rows, 20000, 2, out, cfg), Options{Allocator: mem, SourceBatchRows: 500, KeyedCacheGroups: 4})
	if err != nil {
		t.Fatal(err)
	}
	waitForCheckpoints(t, j, 2)
	srv.Outage()
	failed := waitForCheckpoint(t, j, "failed", 0)
	srv.Recover()
	waitForCheckpoint(t, j, "completed", failed.ID)
	if _, err := j.Wait(); err != nil {
		t.Fatal(err)
	}
	if a := j.Attempts(); a != 1 {
		t.Errorf("%d attempts: the outage restarted the job", a)
	}
	if !strings.Contains(fmt.Sprint(failed.Err), "127.0.0.1") {
		t.Errorf("the failed checkpoint's error does not name the store: %v", failed.Err)
	}
	wantKeyedResults(t, rows, keyedResults(t, out))
}

// waitForCheckpoint waits for a checkpoint after id with status.
func waitForCheckpoint(t *testing.T, j *Job, status string, after int64) CheckpointStats {
	t.Helper()
	var found CheckpointStats
	seen := func() bool {
		for _, c := range j.Checkpoints() {
			if c.ID > after && c.Status == status && !c.Savepoint {
				found = c
				return true
			}
		}
		return false
	}
	if !poll.Within(60*time.Second, seen) { // hang guard
		t.Fatalf("no %s checkpoint after %d: %+v", status, after, j.Checkpoints())
	}
	return found
}
