package state

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestValue(t *testing.T) {
	b := openBackend(t, testOptions(t, KeyGroupRange{Start: 0, End: 127}))
	v, err := NewValue(b, "count", Int64Codec{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := v.Get(k(3, "a")); ok || err != nil {
		t.Fatalf("Get of a missing key: ok %v err %v", ok, err)
	}
	for i, key := range []Key{k(3, "a"), k(3, "b"), k(1, "z"), k(127, ""), k(0, "a")} {
		if err := v.Put(key, int64(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := v.Put(k(3, "a"), 42); err != nil {
		t.Fatal(err)
	}
	if got, ok, err := v.Get(k(3, "a")); !ok || err != nil || got != 42 {
		t.Fatalf("Get = %v, %v, %v; want 42", got, ok, err)
	}
	// Same bytes in another key group are another key.
	if got, ok, _ := v.Get(k(0, "a")); !ok || got != 4 {
		t.Fatalf("Get(0, a) = %v, %v; want 4", got, ok)
	}
	if err := v.Clear(k(3, "b")); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := v.Get(k(3, "b")); ok {
		t.Fatal("cleared key still has a value")
	}
	var got []string
	err = v.ForEach(func(key Key, val int64) error {
		got = append(got, fmt.Sprintf("%d/%s=%d", key.Group, key.Bytes, val))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"0/a=4", "1/z=2", "3/a=42", "127/=3"}
	if !slices.Equal(got, want) {
		t.Fatalf("ForEach = %v; want %v (key-group order)", got, want)
	}
	// An error of fn stops the iteration and comes back as is.
	stop := errors.New("stop")
	n := 0
	if err := v.ForEach(func(Key, int64) error { n++; return stop }); err != stop || n != 1 {
		t.Fatalf("ForEach with a failing fn: %v after %d calls", err, n)
	}
}

func TestValueCodecs(t *testing.T) {
	b := openBackend(t, testOptions(t, KeyGroupRange{Start: 0, End: 127}))
	type point struct {
		X, Y int32
		Z    float64
	}
	pc, err := NewBinaryCodec[point]()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewBinaryCodec[[]int](); err == nil {
		t.Fatal("NewBinaryCodec accepted a slice type")
	}
	checkRoundTripAny(t, b, "bytes", BytesCodec{}, []byte("\x00\xffbytes"), func(a, b []byte) bool { return string(a) == string(b) })
	checkRoundTrip(t, b, "string", StringCodec{}, "héllo", nil)
	checkRoundTrip(t, b, "int64", Int64Codec{}, -7, nil)
	checkRoundTrip(t, b, "uint64", Uint64Codec{}, 1<<63+5, nil)
	checkRoundTrip(t, b, "float64", Float64Codec{}, -2.5, nil)
	checkRoundTrip(t, b, "bool", BoolCodec{}, true, nil)
	checkRoundTrip[point](t, b, "binary", pc, point{1, -2, 3.5}, nil)
	checkRoundTripAny(t, b, "gob", GobCodec[map[string][]int]{}, map[string][]int{"a": {1, 2}},
		func(a, b map[string][]int) bool { return fmt.Sprint(a) == fmt.Sprint(b) })
}

func checkRoundTrip[T comparable](t *testing.T, b *Backend, name string, c Codec[T], val T, eq func(a, b T) bool) {
	t.Helper()
	checkRoundTripAny(t, b, name, c, val, func(a, b T) bool {
		if eq != nil {
			return eq(a, b)
		}
		return a == b
	})
}

func checkRoundTripAny[T any](t *testing.T, b *Backend, name string, c Codec[T], val T, eq func(a, b T) bool) {
	t.Helper()
	v, err := NewValue(b, name, c)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Put(k(5, "x"), val); err != nil {
		t.Fatal(err)
	}
	got, ok, err := v.Get(k(5, "x"))
	if err != nil || !ok || !eq(got, val) {
		t.Fatalf("%s codec: Get = %v, %v, %v; want %v", name, got, ok, err, val)
	}
}

func TestOrderedCodecs(t *testing.T) {
	ints := []int64{-1 << 63, -5, -1, 0, 1, 7, 1<<63 - 1}
	floats := []float64{-1e300, -2.5, math.Copysign(0, -1), 0, 1e-300, 3, 1e300}
	for i := 1; i < len(ints); i++ {
		a, b := Int64Codec{}.Encode(nil, ints[i-1]), Int64Codec{}.Encode(nil, ints[i])
		if string(a) >= string(b) {
			t.Errorf("int64 encoding of %d not below %d", ints[i-1], ints[i])
		}
	}
	for i := 1; i < len(floats); i++ {
		a, b := Float64Codec{}.Encode(nil, floats[i-1]), Float64Codec{}.Encode(nil, floats[i])
		if string(a) > string(b) {
			t.Errorf("float64 encoding of %v above %v", floats[i-1], floats[i])
		}
		if got, _ := (Float64Codec{}).Decode(b); got != floats[i] {
			t.Errorf("float64 round trip of %v = %v", floats[i], got)
		}
	}
}

func TestList(t *testing.T) {
	b := openBackend(t, testOptions(t, KeyGroupRange{Start: 0, End: 127}))
	l, err := NewList(b, "events", StringCodec{})
	if err != nil {
		t.Fatal(err)
	}
	key := k(9, "user")
	if got, err := l.Get(key); got != nil || err != nil {
		t.Fatalf("Get of an empty list = %v, %v", got, err)
	}
	for _, s := range []string{"a", "b"} {
		if err := l.Add(key, s); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.AddAll(key, []string{"c", "", "d"}); err != nil {
		t.Fatal(err)
	}
	if err := l.AddAll(key, nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := l.Get(key); !slices.Equal(got, []string{"a", "b", "c", "", "d"}) {
		t.Fatalf("Get = %q", got)
	}
	if err := l.Update(key, []string{"x"}); err != nil {
		t.Fatal(err)
	}
	if err := l.Add(key, "y"); err != nil {
		t.Fatal(err)
	}
	if got, _ := l.Get(key); !slices.Equal(got, []string{"x", "y"}) {
		t.Fatalf("Get after Update and Add = %q", got)
	}
	if err := l.Add(k(2, "other"), "o"); err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := l.ForEach(func(key Key, vs []string) error {
		got = append(got, fmt.Sprintf("%d/%s=%s", key.Group, key.Bytes, strings.Join(vs, ",")))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"2/other=o", "9/user=x,y"}; !slices.Equal(got, want) {
		t.Fatalf("ForEach = %q; want %q", got, want)
	}
	if err := l.Update(key, nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := l.Get(key); got != nil {
		t.Fatalf("Update with no values left %q", got)
	}
	if err := l.Clear(k(2, "other")); err != nil {
		t.Fatal(err)
	}
	if got, _ := l.Get(k(2, "other")); got != nil {
		t.Fatalf("Clear left %q", got)
	}
}

func TestMap(t *testing.T) {
	b := openBackend(t, testOptions(t, KeyGroupRange{Start: 0, End: 127}))
	m, err := NewMap(b, "sums", Int64Codec{}, Float64Codec{})
	if err != nil {
		t.Fatal(err)
	}
	key := k(17, "user")
	if empty, err := m.IsEmpty(key); !empty || err != nil {
		t.Fatalf("IsEmpty of a new map = %v, %v", empty, err)
	}
	for _, uk := range []int64{5, -3, 100, 0} {
		if err := m.Put(key, uk, float64(uk)/2); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Put(k(17, "user2"), 1, 1); err != nil { // a longer key with the same prefix
		t.Fatal(err)
	}
	if got, ok, err := m.Get(key, 100); !ok || err != nil || got != 50 {
		t.Fatalf("Get(100) = %v, %v, %v", got, ok, err)
	}
	if _, ok, _ := m.Get(key, 6); ok {
		t.Fatal("Get of a missing user key found one")
	}
	if ok, _ := m.Contains(key, -3); !ok {
		t.Fatal("Contains(-3) is false")
	}
	if err := m.Remove(key, 0); err != nil {
		t.Fatal(err)
	}
	if ok, _ := m.Contains(key, 0); ok {
		t.Fatal("Contains after Remove is true")
	}
	var uks []int64
	if err := m.All(key, func(uk int64, uv float64) error {
		if uv != float64(uk)/2 {
			t.Errorf("All: %d -> %v", uk, uv)
		}
		uks = append(uks, uk)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := []int64{-3, 5, 100}; !slices.Equal(uks, want) {
		t.Fatalf("All visited %v; want %v (numeric order of the user keys)", uks, want)
	}
	var all []string
	if err := m.ForEach(func(k Key, uk int64, uv float64) error {
		all = append(all, fmt.Sprintf("%s:%d", k.Bytes, uk))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"user:-3", "user:5", "user:100", "user2:1"}; !slices.Equal(all, want) {
		t.Fatalf("ForEach = %v; want %v", all, want)
	}
	if err := m.Clear(key); err != nil {
		t.Fatal(err)
	}
	if empty, _ := m.IsEmpty(key); !empty {
		t.Fatal("map not empty after Clear")
	}
	if empty, _ := m.IsEmpty(k(17, "user2")); empty {
		t.Fatal("Clear of one key emptied another key's map")
	}
}

func TestReducingAndAggregating(t *testing.T) {
	b := openBackend(t, testOptions(t, KeyGroupRange{Start: 0, End: 127}))
	r, err := NewReducing(b, "max", Int64Codec{}, func(a, b int64) (int64, error) { return max(a, b), nil })
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []int64{3, 9, 4} {
		if err := r.Add(k(1, "a"), v); err != nil {
			t.Fatal(err)
		}
	}
	if got, ok, _ := r.Get(k(1, "a")); !ok || got != 9 {
		t.Fatalf("reducing Get = %v, %v; want 9", got, ok)
	}
	if err := r.Clear(k(1, "a")); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := r.Get(k(1, "a")); ok {
		t.Fatal("reducing state not cleared")
	}

	type acc struct{ Sum, N int64 }
	ac, _ := NewBinaryCodec[acc]()
	boom := errors.New("boom")
	avg, err := NewAggregating(b, "avg", ac, AggregateFunction[int64, acc, float64]{
		CreateAccumulator: func() acc { return acc{} },
		Add: func(in int64, a acc) (acc, error) {
			if in < 0 {
				return a, boom
			}
			return acc{a.Sum + in, a.N + 1}, nil
		},
		GetResult: func(a acc) (float64, error) { return float64(a.Sum) / float64(a.N), nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, in := range []int64{1, 2, 6} {
		if err := avg.Add(k(i%2, "x"), in); err != nil {
			t.Fatal(err)
		}
	}
	if err := avg.Add(k(0, "x"), -1); err != boom {
		t.Fatalf("Add with a failing function: %v", err)
	}
	if got, ok, _ := avg.Get(k(0, "x")); !ok || got != 3.5 {
		t.Fatalf("aggregating Get = %v, %v; want 3.5", got, ok)
	}
	var res []string
	if err := avg.ForEach(func(k Key, out float64) error {
		res = append(res, fmt.Sprintf("%d=%v", k.Group, out))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"0=3.5", "1=2"}; !slices.Equal(res, want) {
		t.Fatalf("ForEach = %v; want %v", res, want)
	}
	if err := avg.Clear(k(0, "x")); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := avg.Get(k(0, "x")); ok {
		t.Fatal("aggregating state not cleared")
	}
}

func TestWrongKeyGroup(t *testing.T) {
	b := openBackend(t, testOptions(t, KeyGroupRange{Start: 64, End: 127}))
	v, _ := NewValue(b, "v", StringCodec{})
	l, _ := NewList(b, "l", StringCodec{})
	m, _ := NewMap(b, "m", StringCodec{}, StringCodec{})
	for _, g := range []int{63, 128, -1} {
		key := k(g, "a")
		errs := []error{v.Put(key, "x"), v.Clear(key), l.Add(key, "x"), m.Put(key, "a", "b")}
		_, _, err := v.Get(key)
		_, err2 := l.Get(key)
		_, err3 := m.IsEmpty(key)
		errs = append(errs, err, err2, err3)
		for i, err := range errs {
			if !errors.Is(err, ErrKeyGroup) || !strings.Contains(err.Error(), fmt.Sprintf("key group %d", g)) {
				t.Errorf("call %d with key group %d: %v; want ErrKeyGroup naming the group", i, g, err)
			}
		}
	}
	if err := v.Put(k(64, "a"), "ok"); err != nil {
		t.Fatal(err)
	}
}

func TestRegisterConflict(t *testing.T) {
	b := openBackend(t, testOptions(t, KeyGroupRange{Start: 0, End: 127}))
	if _, err := NewValue(b, "counts", Int64Codec{}); err != nil {
		t.Fatal(err)
	}
	if _, err := NewValue(b, "counts", Int64Codec{}); err != nil {
		t.Fatalf("registering the same value state again: %v", err)
	}
	_, err := NewMap(b, "counts", StringCodec{}, Int64Codec{})
	if !errors.Is(err, ErrStateConflict) || !strings.Contains(err.Error(), `"counts"`) {
		t.Fatalf("registering a value state as a map: %v; want ErrStateConflict naming the state", err)
	}
	_, err = NewValue(b, "counts", Int64Codec{}, WithTTL(TTL{Duration: time.Minute}))
	if !errors.Is(err, ErrStateConflict) {
		t.Fatalf("registering with another TTL: %v", err)
	}
	if _, err := NewValue(b, "", Int64Codec{}); !errors.Is(err, ErrInvalidState) {
		t.Fatalf("empty name: %v", err)
	}
	if _, err := NewValue(b, "t", Int64Codec{}, WithTTL(TTL{Duration: time.Microsecond})); !errors.Is(err, ErrInvalidState) {
		t.Fatalf("sub-millisecond TTL: %v", err)
	}

	// Across a restore the recorded kind is checked too.
	st := initStorage(t)
	h := checkpoint(t, b, st, 1)
	r := restoreBackend(t, testOptions(t, KeyGroupRange{Start: 0, End: 127}), st.Root, []Handle{h})
	if _, err := NewList(r, "counts", Int64Codec{}); !errors.Is(err, ErrStateConflict) || !strings.Contains(err.Error(), "restored") {
		t.Fatalf("registering a restored value state as a list: %v", err)
	}
	if _, err := NewValue(r, "counts", Int64Codec{}, WithTTL(TTL{Duration: time.Hour})); err != nil {
		t.Fatalf("a restored state may gain a TTL: %v", err)
	}
}

func TestOptionsValidation(t *testing.T) {
	_, err := Open(Options{MaxParallelism: 100000, KeyGroups: KeyGroupRange{Start: 5, End: 2}, Subtask: -1})
	if !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("Open with bad options: %v", err)
	}
	for _, want := range []string{"Dir", "OperatorUID", "Subtask", "MaxParallelism", "KeyGroups"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
	opts := testOptions(t, KeyGroupRange{Start: 100, End: 200})
	if _, err := Open(opts); !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), "[0, 128)") {
		t.Fatalf("key groups beyond max parallelism: %v", err)
	}
	if _, err := os.Stat(opts.Dir); !os.IsNotExist(err) {
		t.Fatalf("failed Open left %s: %v", opts.Dir, err)
	}
}

func TestCloseRemovesDir(t *testing.T) {
	opts := testOptions(t, KeyGroupRange{Start: 0, End: 127})
	b, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	v, _ := NewValue(b, "v", StringCodec{})
	if err := v.Put(k(1, "a"), "x"); err != nil {
		t.Fatal(err)
	}
	p, err := b.PrepareSnapshot(1) // never persisted
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := os.Stat(opts.Dir); !os.IsNotExist(err) {
		t.Fatalf("Close left %s: %v", opts.Dir, err)
	}
	if err := v.Put(k(1, "a"), "y"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Put after Close: %v", err)
	}
	if _, _, err := v.Get(k(1, "a")); !errors.Is(err, ErrClosed) {
		t.Fatalf("Get after Close: %v", err)
	}
	if _, err := b.PrepareSnapshot(2); !errors.Is(err, ErrClosed) {
		t.Fatalf("PrepareSnapshot after Close: %v", err)
	}
	if _, err := p.Persist(t.Context(), initStorage(t)); !errors.Is(err, ErrClosed) {
		t.Fatalf("Persist after Close: %v", err)
	}
	if _, err := NewValue(b, "w", StringCodec{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("NewValue after Close: %v", err)
	}
}

func TestOpenDirReuse(t *testing.T) {
	opts := testOptions(t, KeyGroupRange{Start: 0, End: 127})
	// A directory left by a crashed backend is cleaned.
	if err := os.MkdirAll(filepath.Join(opts.Dir, "db"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{dirMarker, "db/000001.sst"} {
		if err := os.WriteFile(filepath.Join(opts.Dir, f), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b := openBackend(t, opts)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	// A foreign non-empty directory is left alone.
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(opts.Dir, "precious"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(opts); !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), opts.Dir) {
		t.Fatalf("Open on a foreign directory: %v", err)
	}
	if _, err := os.Stat(filepath.Join(opts.Dir, "precious")); err != nil {
		t.Fatalf("Open touched a foreign directory: %v", err)
	}
}
