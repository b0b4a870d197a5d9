package state

import (
	"bytes"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// fakeClock is a settable clock for TTL tests.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// testOptions returns options of a backend owning key groups r of 128, in a
// new directory of t.
func testOptions(t testing.TB, r KeyGroupRange) Options {
	return Options{
		Dir:            filepath.Join(t.TempDir(), "backend"),
		OperatorUID:    "op/agg",
		Subtask:        0,
		MaxParallelism: 128,
		KeyGroups:      r,
	}
}

// openBackend opens a backend that t closes.
func openBackend(t testing.TB, opts Options) *Backend {
	t.Helper()
	b, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// restoreBackend restores a backend that t closes.
func restoreBackend(t testing.TB, opts Options, base string, hs []Handle) *Backend {
	t.Helper()
	b, err := Restore(t.Context(), opts, base, hs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// initStorage returns an initialized storage in a new directory of t.
func initStorage(t testing.TB) Storage {
	t.Helper()
	st := Storage{Root: filepath.Join(t.TempDir(), "checkpoints", "job-1")}
	if err := st.Init(); err != nil {
		t.Fatal(err)
	}
	return st
}

// checkpoint prepares and persists a snapshot of b into st.
func checkpoint(t testing.TB, b *Backend, st Storage, id int64) Handle {
	t.Helper()
	p, err := b.PrepareSnapshot(id)
	if err != nil {
		t.Fatal(err)
	}
	h, err := p.Persist(t.Context(), st)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// dump returns every entry of b's key groups (state entries, not metas),
// raw key -> raw value.
func dump(t testing.TB, b *Backend) map[string]string {
	t.Helper()
	lower, upper := groupSpan(b.opts.KeyGroups)
	return dumpSpan(t, b.db, lower, upper)
}

func dumpSpan(t testing.TB, db *pebble.DB, lower, upper []byte) map[string]string {
	t.Helper()
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	out := make(map[string]string)
	for ok := it.First(); ok; ok = it.Next() {
		out[string(it.Key())] = string(it.Value())
	}
	if err := it.Error(); err != nil {
		t.Fatal(err)
	}
	return out
}

// rawKeys returns every key of b's database, in order.
func rawKeys(t testing.TB, b *Backend) [][]byte {
	t.Helper()
	it, err := b.db.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var out [][]byte
	for ok := it.First(); ok; ok = it.Next() {
		out = append(out, bytes.Clone(it.Key()))
	}
	return out
}

// k returns the key s of key group g.
func k(g int, s string) Key { return Key{Group: g, Bytes: []byte(s)} }

// keyName returns the name of the i-th test key.
func keyName(i int) string { return fmt.Sprintf("key-%06d", i) }
