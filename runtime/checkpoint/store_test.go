package checkpoint

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/flinkgo/flinkgo/integration/testkit"
	"github.com/flinkgo/flinkgo/internal/objstore"
	"github.com/flinkgo/flinkgo/runtime/config"
)

// On S3, Sweep deletes what no retained checkpoint references: shared
// objects and the chk-<n>/ objects of checkpoints that did not complete.
func TestStoreSweepOnS3(t *testing.T) {
	srv := testkit.StartS3(t)
	objstore.ResetForTests()
	t.Cleanup(objstore.ResetForTests)
	opts := objstore.Options{Endpoint: srv.Endpoint, Region: testkit.S3Region, AccessKey: testkit.S3AccessKey,
		SecretKey: testkit.S3SecretKey, PathStyle: true}
	if err := objstore.Configure(opts); err != nil {
		t.Fatal(err)
	}
	client, err := objstore.NewS3(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := client.CreateBucket(t.Context(), "chk"); err != nil {
		t.Fatal(err)
	}
	s := NewStore(config.CheckpointConfig{Dir: "s3://chk/p", Retained: 1}, "job", nil)
	if s.Root() != "s3://chk/p/job" {
		t.Fatalf("root %s", s.Root())
	}
	if err := s.EnsureStorage(); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"chk-1/op-0/MANIFEST-1", "chk-12/op-0/MANIFEST-1", "chk-2/op-0/MANIFEST-1", "shared/stale.sst"} {
		if err := client.Upload(t.Context(), "s3://chk/p/job/"+k, file); err != nil {
			t.Fatal(err)
		}
	}
	m := &Metadata{Version: MetadataVersion, JobID: "job", CheckpointID: 1}
	if err := WriteMetadata(s.CheckpointDir(1), m); err != nil {
		t.Fatal(err)
	}
	if err := WriteMetadata(s.CheckpointDir(1), m); err == nil {
		t.Fatal("a second _metadata replaced the first")
	}
	got, base, err := LoadMetadata(s.CheckpointDir(1))
	if err != nil || got.CheckpointID != 1 || base != s.CheckpointDir(1) {
		t.Fatalf("LoadMetadata: %+v, %s, %v", got, base, err)
	}
	if err := s.Add(m, s.CheckpointDir(1)); err != nil {
		t.Fatal(err)
	}
	s.Sweep()
	objs, err := client.List(t.Context(), "s3://chk/p/job/")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range objs {
		keys = append(keys, strings.TrimPrefix(o.URL, "s3://chk/p/job/"))
	}
	if want := []string{"chk-1/_metadata", "chk-1/op-0/MANIFEST-1"}; !slices.Equal(keys, want) {
		t.Fatalf("after Sweep the bucket holds %v, want %v", keys, want)
	}
	s.DiscardAll()
	if objs, err := client.List(t.Context(), "s3://chk/p/"); err != nil || len(objs) != 0 {
		t.Fatalf("after DiscardAll: %v, %v", objs, err)
	}
}
