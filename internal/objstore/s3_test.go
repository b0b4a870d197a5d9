package objstore_test

import (
	"bytes"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/flinkgo/flinkgo/integration/testkit"
	"github.com/flinkgo/flinkgo/internal/objstore"
)

func newS3(t *testing.T) *objstore.S3 {
	t.Helper()
	srv := testkit.StartS3(t)
	s, err := objstore.NewS3(t.Context(), objstore.Options{
		Endpoint: srv.Endpoint, Region: testkit.S3Region, AccessKey: testkit.S3AccessKey, SecretKey: testkit.S3SecretKey,
		PathStyle: true, PartSize: 5 << 20, Concurrency: 3,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CreateBucket(t.Context(), "bkt"); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestJoinSplit(t *testing.T) {
	if got := objstore.Join("s3://b/p/", "chk-1", "../x", "f"); got != "s3://b/p/x/f" {
		t.Fatalf("Join: %s", got)
	}
	if got := objstore.Join("s3://b", "shared"); got != "s3://b/shared" {
		t.Fatalf("Join: %s", got)
	}
	if got := objstore.Dir("s3://b/p/_metadata"); got != "s3://b/p" {
		t.Fatalf("Dir: %s", got)
	}
	if _, _, err := objstore.Split("s3:///k"); err == nil {
		t.Fatal("Split accepted a URL without bucket")
	}
}

// TestS3RoundTrip runs every Store operation against a real S3 API
// (moto): a multipart upload (12 MiB in 5 MiB parts), the conditional
// put, listing and deleting.
func TestS3RoundTrip(t *testing.T) {
	s := newS3(t)
	ctx := t.Context()
	dir := t.TempDir()
	big := make([]byte, 12<<20+123)
	_, _ = rand.Read(big)
	src := filepath.Join(dir, "big")
	if err := os.WriteFile(src, big, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.Upload(ctx, "s3://bkt/p/big", src); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Size(ctx, "s3://bkt/p/big"); err != nil || n != int64(len(big)) {
		t.Fatalf("Size: %d, %v", n, err)
	}
	dst := filepath.Join(dir, "back")
	if err := s.Download(ctx, "s3://bkt/p/big", dst); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(dst); !bytes.Equal(got, big) {
		t.Fatal("downloaded bytes differ from the uploaded ones")
	}
	if err := s.PutIfAbsent(ctx, "s3://bkt/p/_metadata", []byte("one")); err != nil {
		t.Fatal(err)
	}
	if err := s.PutIfAbsent(ctx, "s3://bkt/p/_metadata", []byte("two")); !errors.Is(err, objstore.ErrExists) {
		t.Fatalf("second conditional put: %v, want ErrExists", err)
	}
	if got, err := s.Read(ctx, "s3://bkt/p/_metadata"); err != nil || string(got) != "one" {
		t.Fatalf("Read: %q, %v", got, err)
	}
	if _, err := s.Size(ctx, "s3://bkt/p/none"); !errors.Is(err, objstore.ErrNotExist) {
		t.Fatalf("Size of a missing object: %v", err)
	}
	if err := s.Download(ctx, "s3://bkt/p/none", dst); !errors.Is(err, objstore.ErrNotExist) {
		t.Fatalf("Download of a missing object: %v", err)
	}
	objs, err := s.List(ctx, "s3://bkt/p/")
	if err != nil {
		t.Fatal(err)
	}
	var urls []string
	for _, o := range objs {
		urls = append(urls, o.URL)
	}
	if !slices.Equal(urls, []string{"s3://bkt/p/_metadata", "s3://bkt/p/big"}) {
		t.Fatalf("List: %v", urls)
	}
	if err := s.Delete(ctx, append(urls, "s3://bkt/p/none")); err != nil {
		t.Fatal(err)
	}
	if objs, err := s.List(ctx, "s3://bkt/"); err != nil || len(objs) != 0 {
		t.Fatalf("after Delete: %v, %v", objs, err)
	}
}
