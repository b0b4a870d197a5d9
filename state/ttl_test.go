package state

import (
	"slices"
	"testing"
	"time"
)

// ttlBackend returns a backend with a fake clock.
func ttlBackend(t *testing.T) (*Backend, *fakeClock) {
	clock := newFakeClock()
	opts := testOptions(t, KeyGroupRange{Start: 0, End: 127})
	opts.Clock = clock.Now
	return openBackend(t, opts), clock
}

// stored reports whether b's database holds an entry of state name for key.
func stored(t *testing.T, b *Backend, name string, key Key) bool {
	t.Helper()
	keys := newStateKeys(name)
	prefix := append([]byte(nil), keys.entry(key)...)
	return len(dumpSpan(t, b.db, prefix, prefixSuccessor(prefix))) > 0
}

func TestTTLValueOnCreateAndWrite(t *testing.T) {
	b, clock := ttlBackend(t)
	v, err := NewValue(b, "v", StringCodec{}, WithTTL(TTL{Duration: 10 * time.Second}))
	if err != nil {
		t.Fatal(err)
	}
	key := k(4, "a")
	if err := v.Put(key, "x"); err != nil {
		t.Fatal(err)
	}
	clock.Advance(6 * time.Second)
	if got, ok, _ := v.Get(key); !ok || got != "x" {
		t.Fatalf("Get before expiry = %q, %v", got, ok)
	}
	clock.Advance(4 * time.Second) // exactly the TTL after the write: expired (reads do not refresh)
	if _, ok, _ := v.Get(key); ok {
		t.Fatal("expired value returned with NeverReturnExpired")
	}
	if stored(t, b, "v", key) {
		t.Fatal("expired value not removed by the read that met it")
	}
	// A write refreshes the timestamp.
	if err := v.Put(key, "y"); err != nil {
		t.Fatal(err)
	}
	clock.Advance(9 * time.Second)
	if err := v.Put(key, "z"); err != nil {
		t.Fatal(err)
	}
	clock.Advance(9 * time.Second)
	if got, ok, _ := v.Get(key); !ok || got != "z" {
		t.Fatalf("Get after rewrite = %q, %v", got, ok)
	}
}

func TestTTLValueOnReadAndWrite(t *testing.T) {
	b, clock := ttlBackend(t)
	v, _ := NewValue(b, "v", StringCodec{}, WithTTL(TTL{Duration: 10 * time.Second, Update: OnReadAndWrite}))
	key := k(4, "a")
	_ = v.Put(key, "x")
	for range 5 { // each read within the TTL keeps it alive
		clock.Advance(8 * time.Second)
		if _, ok, _ := v.Get(key); !ok {
			t.Fatal("value expired although read within its TTL")
		}
	}
	clock.Advance(10 * time.Second)
	if _, ok, _ := v.Get(key); ok {
		t.Fatal("value did not expire")
	}
}

func TestTTLReturnExpiredIfNotCleanedUp(t *testing.T) {
	b, clock := ttlBackend(t)
	v, _ := NewValue(b, "v", StringCodec{}, WithTTL(TTL{Duration: time.Second, Visibility: ReturnExpiredIfNotCleanedUp}))
	key := k(4, "a")
	_ = v.Put(key, "x")
	clock.Advance(2 * time.Second)
	if got, ok, _ := v.Get(key); !ok || got != "x" {
		t.Fatalf("expired, not cleaned up value: %q, %v; want it returned", got, ok)
	}
	if _, ok, _ := v.Get(key); ok {
		t.Fatal("expired value returned again after the read that cleaned it up")
	}

	_ = v.Put(key, "y")
	clock.Advance(2 * time.Second)
	if n, err := b.CleanupExpired(); err != nil || n != 1 {
		t.Fatalf("CleanupExpired = %d, %v; want 1", n, err)
	}
	if _, ok, _ := v.Get(key); ok {
		t.Fatal("value returned after CleanupExpired removed it")
	}
}

func TestTTLList(t *testing.T) {
	b, clock := ttlBackend(t)
	l, _ := NewList(b, "l", StringCodec{}, WithTTL(TTL{Duration: 10 * time.Second}))
	key := k(8, "a")
	_ = l.Add(key, "old")
	clock.Advance(5 * time.Second)
	_ = l.AddAll(key, []string{"mid1", "mid2"})
	clock.Advance(5 * time.Second) // "old" expires
	_ = l.Add(key, "new")
	if got, _ := l.Get(key); !slices.Equal(got, []string{"mid1", "mid2", "new"}) {
		t.Fatalf("Get = %q; want the elements that have not expired", got)
	}
	clock.Advance(5 * time.Second)
	if got, _ := l.Get(key); !slices.Equal(got, []string{"new"}) {
		t.Fatalf("Get = %q; want [new]", got)
	}
	clock.Advance(5 * time.Second)
	if got, _ := l.Get(key); got != nil {
		t.Fatalf("Get = %q; want nothing", got)
	}
	if stored(t, b, "l", key) {
		t.Fatal("list whose elements all expired is still stored")
	}

	// OnReadAndWrite refreshes every element on Get.
	lr, _ := NewList(b, "lr", StringCodec{}, WithTTL(TTL{Duration: 10 * time.Second, Update: OnReadAndWrite}))
	_ = lr.Add(key, "a")
	clock.Advance(5 * time.Second)
	_ = lr.Add(key, "b")
	clock.Advance(8 * time.Second)
	if got, _ := lr.Get(key); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("Get = %q; want [b]", got)
	}
	clock.Advance(8 * time.Second) // b was refreshed by the read
	if got, _ := lr.Get(key); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("Get after a refreshing read = %q; want [b]", got)
	}
}

func TestTTLMap(t *testing.T) {
	b, clock := ttlBackend(t)
	m, _ := NewMap(b, "m", StringCodec{}, Int64Codec{}, WithTTL(TTL{Duration: 10 * time.Second, Update: OnReadAndWrite}))
	key := k(8, "a")
	_ = m.Put(key, "x", 1)
	clock.Advance(6 * time.Second)
	_ = m.Put(key, "y", 2)
	clock.Advance(6 * time.Second) // x expired, y alive
	var got []string
	_ = m.All(key, func(uk string, _ int64) error { got = append(got, uk); return nil })
	if !slices.Equal(got, []string{"y"}) {
		t.Fatalf("All = %q; want [y]", got)
	}
	if got := len(dump(t, b)); got != 1 {
		t.Fatalf("%d map entries stored; want 1 (All removes the expired x)", got)
	}
	clock.Advance(6 * time.Second) // All refreshed y
	if ok, _ := m.Contains(key, "y"); !ok {
		t.Fatal("entry refreshed by All expired")
	}
	clock.Advance(11 * time.Second)
	if empty, _ := m.IsEmpty(key); !empty {
		t.Fatal("map with only expired entries is not empty")
	}
	if stored(t, b, "m", key) {
		t.Fatal("expired entries not removed by IsEmpty")
	}
}

func TestTTLReducingAndForEach(t *testing.T) {
	b, clock := ttlBackend(t)
	r, _ := NewReducing(b, "sum", Int64Codec{}, func(a, b int64) (int64, error) { return a + b, nil }, WithTTL(TTL{Duration: 10 * time.Second}))
	_ = r.Add(k(1, "a"), 1)
	_ = r.Add(k(2, "b"), 1)
	clock.Advance(11 * time.Second)
	_ = r.Add(k(1, "a"), 5) // the expired sum is dropped: restart from 5
	if got, _, _ := r.Get(k(1, "a")); got != 5 {
		t.Fatalf("sum = %d; want 5", got)
	}
	var keys []string
	_ = r.ForEach(func(k Key, v int64) error { keys = append(keys, string(k.Bytes)); return nil })
	if !slices.Equal(keys, []string{"a"}) {
		t.Fatalf("ForEach = %q; want [a]", keys)
	}
	if stored(t, b, "sum", k(2, "b")) {
		t.Fatal("ForEach did not remove the expired entry it skipped")
	}
}

func TestTTLCleanupExpired(t *testing.T) {
	b, clock := ttlBackend(t)
	v, _ := NewValue(b, "v", StringCodec{}, WithTTL(TTL{Duration: 10 * time.Second}))
	l, _ := NewList(b, "l", StringCodec{}, WithTTL(TTL{Duration: 10 * time.Second}))
	m, _ := NewMap(b, "m", StringCodec{}, StringCodec{}, WithTTL(TTL{Duration: 10 * time.Second}))
	plain, _ := NewValue(b, "plain", StringCodec{})
	for i := range 100 {
		key := k(i%128, keyName(i))
		_ = v.Put(key, "x")
		_ = l.Add(key, "x")
		_ = m.Put(key, "a", "x")
		_ = plain.Put(key, "x")
	}
	clock.Advance(5 * time.Second)
	for i := range 50 {
		key := k(i%128, keyName(i))
		_ = v.Put(key, "y")
		_ = l.Add(key, "y")
		_ = m.Put(key, "b", "y")
	}
	clock.Advance(6 * time.Second)
	n, err := b.CleanupExpired()
	if err != nil {
		t.Fatal(err)
	}
	// 50 values, 100 lists (50 deleted, 50 rewritten) and 100 map entries.
	if n != 250 {
		t.Fatalf("CleanupExpired removed or rewrote %d entries; want 250", n)
	}
	// What is left: 50 values, 50 lists, 50 map entries, 100 plain values.
	if got := len(dump(t, b)); got != 250 {
		t.Fatalf("%d entries left; want 250", got)
	}
	if got, _ := l.Get(k(0, keyName(0))); !slices.Equal(got, []string{"y"}) {
		t.Fatalf("list after cleanup = %q", got)
	}
}

func TestTTLCleanupOnRestore(t *testing.T) {
	clock := newFakeClock()
	st := initStorage(t)
	opts := func(r KeyGroupRange) Options {
		o := testOptions(t, r)
		o.Clock = clock.Now
		return o
	}
	var handles []Handle
	for i, r := range []KeyGroupRange{{Start: 0, End: 63}, {Start: 64, End: 127}} {
		o := opts(r)
		o.Subtask = i
		b := openBackend(t, o)
		v, _ := NewValue(b, "v", StringCodec{}, WithTTL(TTL{Duration: 10 * time.Second}))
		l, _ := NewList(b, "l", StringCodec{}, WithTTL(TTL{Duration: 10 * time.Second}))
		for g := r.Start; g <= r.End; g++ {
			_ = v.Put(k(g, "old"), "x")
			_ = l.Add(k(g, "a"), "old")
		}
		clock.Advance(5 * time.Second)
		for g := r.Start; g <= r.End; g++ {
			_ = v.Put(k(g, "new"), "y")
			_ = l.Add(k(g, "a"), "new")
		}
		clock.Advance(-5 * time.Second)
		handles = append(handles, checkpoint(t, b, st, 1))
	}
	clock.Advance(12 * time.Second) // "old" entries expired, "new" ones alive
	check := func(name string, b *Backend, r KeyGroupRange) {
		got := dump(t, b)
		if want := 2 * r.Len(); len(got) != want { // one "new" value and one list per key group
			t.Fatalf("%s: %d entries after restore; want %d", name, len(got), want)
		}
		l, _ := NewList(b, "l", StringCodec{}, WithTTL(TTL{Duration: time.Hour})) // raw contents, whatever the new TTL
		for g := r.Start; g <= r.End; g++ {
			if vs, _ := l.Get(k(g, "a")); !slices.Equal(vs, []string{"new"}) {
				t.Fatalf("%s: list of group %d = %q", name, g, vs)
			}
		}
	}
	// Same key groups: the fast path, then cleanup.
	check("same range", restoreBackend(t, opts(KeyGroupRange{Start: 0, End: 63}), st.Root, handles[:1]), KeyGroupRange{Start: 0, End: 63})
	// Rescaled: filtered while copying.
	check("rescaled", restoreBackend(t, opts(KeyGroupRange{Start: 0, End: 127}), st.Root, handles), KeyGroupRange{Start: 0, End: 127})
}
