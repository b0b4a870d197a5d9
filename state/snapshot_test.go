package state

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/flinkgo/flinkgo/internal/keygroup"
)

// testStates are the states populate and contents use.
type testStates struct {
	v *Value[int64]
	l *List[string]
	m *Map[string, int64]
}

func registerTestStates(t testing.TB, b *Backend) testStates {
	t.Helper()
	v, err := NewValue(b, "value", Int64Codec{})
	if err != nil {
		t.Fatal(err)
	}
	l, err := NewList(b, "list", StringCodec{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewMap(b, "map", StringCodec{}, Int64Codec{})
	if err != nil {
		t.Fatal(err)
	}
	return testStates{v, l, m}
}

// testKey returns the i-th test key, in the key group its hash gives for
// max parallelism 128.
func testKey(i int) Key {
	return Key{Group: keygroup.ForHash(int32(i)*-1640531535, 128), Bytes: []byte(keyName(i))}
}

// populate writes the keys among the first n that fall into b's key
// groups, with values derived from seed, and returns how many it wrote.
func populate(t testing.TB, b *Backend, s testStates, n, seed int) int {
	t.Helper()
	w := 0
	for i := range n {
		key := testKey(i)
		if !b.KeyGroups().Contains(key.Group) {
			continue
		}
		w++
		if err := s.v.Put(key, int64(i*seed)); err != nil {
			t.Fatal(err)
		}
		if err := s.l.AddAll(key, []string{fmt.Sprint(seed), fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
		if i%4 == 0 {
			for j := range 3 {
				if err := s.m.Put(key, fmt.Sprint("uk", j), int64(i+j+seed)); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	return w
}

// contents returns every entry of the test states of b, read through the
// states' iteration.
func contents(t testing.TB, b *Backend) map[string]string {
	t.Helper()
	s := registerTestStates(t, b)
	out := make(map[string]string)
	if err := s.v.ForEach(func(k Key, v int64) error {
		out[fmt.Sprintf("value|%d|%s", k.Group, k.Bytes)] = fmt.Sprint(v)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.l.ForEach(func(k Key, vs []string) error {
		out[fmt.Sprintf("list|%d|%s", k.Group, k.Bytes)] = strings.Join(vs, ",")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.m.ForEach(func(k Key, uk string, v int64) error {
		out[fmt.Sprintf("map|%d|%s|%s", k.Group, k.Bytes, uk)] = fmt.Sprint(v)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// checkOnlyGroups fails t when b's database holds a state entry outside its
// key groups.
func checkOnlyGroups(t testing.TB, b *Backend) {
	t.Helper()
	for _, rk := range rawKeys(t, b) {
		if rk[0] == metaPrefix {
			continue
		}
		if g := int(rk[0])<<8 | int(rk[1]); !b.KeyGroups().Contains(g) {
			t.Fatalf("backend %v holds a key of key group %d", b.KeyGroups(), g)
		}
	}
}

func TestCheckpointRestoreSameRange(t *testing.T) {
	st := initStorage(t)
	b := openBackend(t, testOptions(t, KeyGroupRange{Start: 0, End: 127}))
	s := registerTestStates(t, b)
	populate(t, b, s, 2000, 1)
	want := contents(t, b)

	p, err := b.PrepareSnapshot(7)
	if err != nil {
		t.Fatal(err)
	}
	populate(t, b, s, 2000, 2) // after the barrier: not in the snapshot
	h, err := p.Persist(t.Context(), st)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p.dir); !os.IsNotExist(err) {
		t.Fatalf("Persist left its staging directory: %v", err)
	}
	if h.CheckpointID != 7 || h.StateSize == 0 || h.BytesWritten != h.StateSize || len(h.SharedFiles()) == 0 {
		t.Fatalf("handle: %+v", h)
	}
	for _, f := range h.Files {
		if f.Shared != strings.HasPrefix(f.Path, "shared/") || !f.Shared && !strings.HasPrefix(f.Path, "chk-7/op%2Fagg-0/") {
			t.Fatalf("file %+v is not where the layout puts it", f)
		}
	}

	r := restoreBackend(t, testOptions(t, KeyGroupRange{Start: 0, End: 127}), st.Root, []Handle{h})
	if got := contents(t, r); !maps.Equal(got, want) {
		t.Fatalf("restored contents differ: %d entries, want %d", len(got), len(want))
	}
	// The restored backend's next checkpoint into the same storage reuses
	// the restored shared files: it writes no sstable.
	h2 := checkpoint(t, r, st, 8)
	for _, f := range h2.Files {
		if f.Shared && !slicesContains(h.SharedFiles(), f.Path) {
			t.Fatalf("checkpoint after restore wrote shared file %s again", f.Path)
		}
	}
	if h2.BytesWritten >= h.BytesWritten/10 {
		t.Fatalf("checkpoint after restore wrote %d bytes; the restored one has %d", h2.BytesWritten, h.BytesWritten)
	}
}

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func TestRescale(t *testing.T) {
	for _, byBatch := range []bool{false, true} {
		t.Run(fmt.Sprintf("byBatch=%v", byBatch), func(t *testing.T) {
			st := initStorage(t)
			want := map[string]string{}
			var handles []Handle
			for i, r := range []KeyGroupRange{{Start: 0, End: 63}, {Start: 64, End: 127}} {
				o := testOptions(t, r)
				o.Subtask = i
				b := openBackend(t, o)
				s := registerTestStates(t, b)
				if n := populate(t, b, s, 3000, i+1); n == 0 {
					t.Fatalf("no key in %v", r)
				}
				maps.Copy(want, contents(t, b))
				handles = append(handles, checkpoint(t, b, st, 3))
			}
			for _, p := range []int{1, 4, 3} {
				got := map[string]string{}
				for i := range p {
					o := testOptions(t, SubtaskKeyGroups(128, p, i))
					o.Subtask = i
					o.restoreByBatch = byBatch
					r := restoreBackend(t, o, st.Root, handles)
					checkOnlyGroups(t, r)
					part := contents(t, r)
					for k := range part {
						if _, dup := got[k]; dup {
							t.Fatalf("p=%d: %s restored twice", p, k)
						}
					}
					maps.Copy(got, part)
				}
				if !maps.Equal(got, want) {
					t.Fatalf("p=%d: restored %d entries; want %d", p, len(got), len(want))
				}
			}
		})
	}
}

func TestIncrementalCheckpoint(t *testing.T) {
	st := initStorage(t)
	b := openBackend(t, testOptions(t, KeyGroupRange{Start: 0, End: 127}))
	v, _ := NewValue(b, "v", BytesCodec{})
	payload := []byte(strings.Repeat("x", 100))
	const n = 20000
	for i := range n {
		if err := v.Put(testKey(i), payload); err != nil {
			t.Fatal(err)
		}
	}
	h1 := checkpoint(t, b, st, 1)
	for i := 0; i < n; i += 100 { // 1% of the keys
		if err := v.Put(testKey(i), []byte("changed")); err != nil {
			t.Fatal(err)
		}
	}
	h2 := checkpoint(t, b, st, 2)
	t.Logf("first checkpoint wrote %d bytes (state %d), second %d bytes (state %d)",
		h1.BytesWritten, h1.StateSize, h2.BytesWritten, h2.StateSize)
	if h2.BytesWritten >= h1.BytesWritten/4 {
		t.Fatalf("second checkpoint wrote %d bytes, first %d: not incremental", h2.BytesWritten, h1.BytesWritten)
	}
	reused := 0
	for _, f := range h2.SharedFiles() {
		if slicesContains(h1.SharedFiles(), f) {
			reused++
		}
	}
	if reused == 0 {
		t.Fatal("second checkpoint reuses no shared file of the first")
	}
	r := restoreBackend(t, testOptions(t, KeyGroupRange{Start: 0, End: 127}), st.Root, []Handle{h2})
	rv, _ := NewValue(r, "v", BytesCodec{})
	if got, _, _ := rv.Get(testKey(100)); string(got) != "changed" {
		t.Fatalf("restored value %q", got)
	}
	if got, _, _ := rv.Get(testKey(101)); string(got) != string(payload) {
		t.Fatalf("restored value %q", got)
	}
}

func TestSavepointMovable(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "savepoint-abc")
	want := map[string]string{}
	var handles []Handle
	for i, r := range []KeyGroupRange{{Start: 0, End: 63}, {Start: 64, End: 127}} {
		o := testOptions(t, r)
		o.Subtask = i
		b := openBackend(t, o)
		populate(t, b, registerTestStates(t, b), 1000, 3)
		maps.Copy(want, contents(t, b))
		p, err := b.PrepareSnapshot(10)
		if err != nil {
			t.Fatal(err)
		}
		h, err := p.PersistSelfContained(t.Context(), dir)
		if err != nil {
			t.Fatal(err)
		}
		if !h.SelfContained || len(h.SharedFiles()) != 0 || h.BytesWritten != h.StateSize {
			t.Fatalf("savepoint handle %+v", h)
		}
		handles = append(handles, h)
	}
	moved := filepath.Join(t.TempDir(), "elsewhere", "sp")
	if err := os.MkdirAll(filepath.Dir(moved), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(dir, moved); err != nil {
		t.Fatal(err)
	}
	// The handles go through JSON, as in _metadata.
	data, err := json.Marshal(handles)
	if err != nil {
		t.Fatal(err)
	}
	var decoded []Handle
	if err := json.Unmarshal(data, &decoded); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(decoded, handles) {
		t.Fatalf("handles changed through JSON:\n%+v\n%+v", decoded, handles)
	}
	whole := restoreBackend(t, testOptions(t, KeyGroupRange{Start: 0, End: 127}), moved, decoded)
	if got := contents(t, whole); !maps.Equal(got, want) {
		t.Fatalf("restored %d entries from the moved savepoint; want %d", len(got), len(want))
	}
	same := restoreBackend(t, testOptions(t, KeyGroupRange{Start: 64, End: 127}), moved, decoded)
	checkOnlyGroups(t, same)
	if len(same.inherit.paths) != 0 {
		t.Fatal("a backend restored from a savepoint inherits shared files")
	}
}

func TestPersistWhileWriting(t *testing.T) {
	st := initStorage(t)
	b := openBackend(t, testOptions(t, KeyGroupRange{Start: 0, End: 127}))
	s := registerTestStates(t, b)
	populate(t, b, s, 3000, 1)
	want := contents(t, b)
	p, err := b.PrepareSnapshot(1)
	if err != nil {
		t.Fatal(err)
	}
	var h Handle
	var perr error
	var wg sync.WaitGroup
	wg.Go(func() { h, perr = p.Persist(context.Background(), Storage{Root: st.Root, CopyFiles: true}) })
	for round := range 3 {
		populate(t, b, s, 3000, round+5)
		if err := b.db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.db.Compact(t.Context(), []byte{0}, []byte{0xff, 0xff}, false); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if perr != nil {
		t.Fatal(perr)
	}
	r := restoreBackend(t, testOptions(t, KeyGroupRange{Start: 0, End: 127}), st.Root, []Handle{h})
	if got := contents(t, r); !maps.Equal(got, want) {
		t.Fatal("snapshot persisted while writing does not hold the state at PrepareSnapshot")
	}
}

func TestPersistCopyFiles(t *testing.T) {
	b := openBackend(t, testOptions(t, KeyGroupRange{Start: 0, End: 127}))
	populate(t, b, registerTestStates(t, b), 500, 1)
	for _, copyFiles := range []bool{false, true} {
		st := initStorage(t)
		st.CopyFiles = copyFiles
		p, err := b.PrepareSnapshot(1)
		if err != nil {
			t.Fatal(err)
		}
		sst := ""
		for _, f := range p.files {
			if immutableFile(f.name) {
				sst = f.name
			}
		}
		staged, err := os.Stat(filepath.Join(b.dbDir, sst))
		if err != nil {
			t.Fatal(err)
		}
		h, err := p.Persist(t.Context(), st)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range h.Files {
			if f.Name != sst {
				continue
			}
			fi, err := os.Stat(filepath.Join(st.Root, f.Path))
			if err != nil {
				t.Fatal(err)
			}
			if os.SameFile(fi, staged) == copyFiles {
				t.Fatalf("CopyFiles=%v: storage file %s shares its inode with the working directory: %v", copyFiles, f.Path, !copyFiles)
			}
		}
	}
}

func TestPersistFailures(t *testing.T) {
	b := openBackend(t, testOptions(t, KeyGroupRange{Start: 0, End: 127}))
	populate(t, b, registerTestStates(t, b), 500, 1)
	st := initStorage(t)

	// A canceled context fails the checkpoint, cleans up, and says why.
	p, err := b.PrepareSnapshot(1)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := p.Persist(ctx, st); !errors.Is(err, context.Canceled) {
		t.Fatalf("Persist with a canceled context: %v", err)
	}
	if _, err := os.Stat(filepath.Join(st.CheckpointDir(1), b.subdirName())); !os.IsNotExist(err) {
		t.Fatalf("failed Persist left its private files: %v", err)
	}
	if _, err := os.Stat(p.dir); !os.IsNotExist(err) {
		t.Fatalf("failed Persist left its staging directory: %v", err)
	}
	if _, err := p.Persist(t.Context(), st); !errors.Is(err, ErrSnapshotUsed) {
		t.Fatalf("second Persist: %v", err)
	}

	// Storage not initialized.
	p, _ = b.PrepareSnapshot(2)
	_, err = p.Persist(t.Context(), Storage{Root: filepath.Join(t.TempDir(), "missing")})
	if !errors.Is(err, ErrStorage) || !strings.Contains(err.Error(), "Storage.Init") {
		t.Fatalf("Persist into storage without Init: %v", err)
	}

	// Discard removes the staging directory, once.
	p, _ = b.PrepareSnapshot(3)
	if err := p.Discard(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p.dir); !os.IsNotExist(err) {
		t.Fatalf("Discard left the staging directory: %v", err)
	}
	if err := p.Discard(); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Persist(t.Context(), st); !errors.Is(err, ErrSnapshotUsed) {
		t.Fatalf("Persist after Discard: %v", err)
	}
}

func TestRestoreValidation(t *testing.T) {
	st := initStorage(t)
	var handles []Handle
	for i, r := range []KeyGroupRange{{Start: 0, End: 63}, {Start: 64, End: 127}} {
		o := testOptions(t, r)
		o.Subtask = i
		b := openBackend(t, o)
		populate(t, b, registerTestStates(t, b), 200, 1)
		handles = append(handles, checkpoint(t, b, st, 1))
	}
	restore := func(o Options, hs ...Handle) error {
		b, err := Restore(t.Context(), o, st.Root, hs)
		if err == nil {
			_ = b.Close()
		}
		if _, statErr := os.Stat(o.Dir); err != nil && !os.IsNotExist(statErr) {
			t.Errorf("failed Restore left %s", o.Dir)
		}
		return err
	}
	opts := testOptions(t, KeyGroupRange{Start: 0, End: 127})

	other := testOptions(t, KeyGroupRange{Start: 0, End: 255})
	other.MaxParallelism = 256
	if err := restore(other, handles...); !errors.Is(err, ErrIncompatibleHandle) || !strings.Contains(err.Error(), "max parallelism 128") {
		t.Errorf("other max parallelism: %v", err)
	}
	outside := testOptions(t, KeyGroupRange{Start: 64, End: 130})
	if err := restore(outside, handles...); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("key groups outside [0, 128): %v", err)
	}
	uid := opts
	uid.OperatorUID = "another"
	if err := restore(uid, handles...); !errors.Is(err, ErrIncompatibleHandle) || !strings.Contains(err.Error(), "another") {
		t.Errorf("other operator: %v", err)
	}
	if err := restore(opts, handles[0], handles[0]); !errors.Is(err, ErrIncompatibleHandle) || !strings.Contains(err.Error(), "overlap") {
		t.Errorf("overlapping handles: %v", err)
	}
	escape := handles[1]
	escape.Files = append([]FileRef(nil), escape.Files...)
	escape.Files[0].Path = "../../etc/passwd"
	if err := restore(opts, handles[0], escape); !errors.Is(err, ErrIncompatibleHandle) {
		t.Errorf("path outside the base: %v", err)
	}
	missing := handles[1]
	missing.Files = append([]FileRef(nil), missing.Files...)
	missing.Files[0].Path += "-gone"
	if err := restore(opts, handles[0], missing); !errors.Is(err, ErrStorage) || !strings.Contains(err.Error(), "-gone") {
		t.Errorf("missing file: %v", err)
	}
	short := handles[1]
	short.Files = append([]FileRef(nil), short.Files...)
	short.Files[0].Size++
	if err := restore(opts, handles[0], short); !errors.Is(err, ErrStorage) {
		t.Errorf("file of another size: %v", err)
	}
	// No intersecting handle: an empty backend.
	if err := restore(testOptions(t, KeyGroupRange{Start: 64, End: 127}), handles[0]); err != nil {
		t.Errorf("restore without intersecting handle: %v", err)
	}
}

func TestCloseDuringPersist(t *testing.T) {
	st := initStorage(t)
	st.CopyFiles = true
	opts := testOptions(t, KeyGroupRange{Start: 0, End: 127})
	b, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	populate(t, b, registerTestStates(t, b), 3000, 1)
	p, err := b.PrepareSnapshot(1)
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := p.Persist(context.Background(), st)
		errc <- err
	}()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil && !errors.Is(err, ErrClosed) {
		t.Fatalf("Persist interrupted by Close: %v; want nil or ErrClosed", err)
	}
	if _, err := os.Stat(opts.Dir); !os.IsNotExist(err) {
		t.Fatalf("Close left %s", opts.Dir)
	}
}

func TestRestoreCanceled(t *testing.T) {
	st := initStorage(t)
	b := openBackend(t, testOptions(t, KeyGroupRange{Start: 0, End: 127}))
	populate(t, b, registerTestStates(t, b), 200, 1)
	h := checkpoint(t, b, st, 1)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	opts := testOptions(t, KeyGroupRange{Start: 0, End: 63})
	if _, err := Restore(ctx, opts, st.Root, []Handle{h}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Restore with a canceled context: %v", err)
	}
	if _, err := os.Stat(opts.Dir); !os.IsNotExist(err) {
		t.Fatalf("canceled Restore left %s", opts.Dir)
	}
}
