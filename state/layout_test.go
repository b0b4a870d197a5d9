package state

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestLayout(t *testing.T) {
	b := openBackend(t, testOptions(t, KeyGroupRange{Start: 0, End: 127}))
	// Names that are prefixes of each other, and a name whose bytes are
	// 0xFF, must not see each other's entries.
	a, _ := NewValue(b, "a", StringCodec{})
	ab, _ := NewList(b, "ab", StringCodec{})
	ff, _ := NewMap(b, "\xff\xff", StringCodec{}, StringCodec{})
	rng := rand.New(rand.NewPCG(1, 2))
	want := map[string]int{}
	for _, i := range rng.Perm(600) {
		g := i % 128
		key := k(g, keyName(i))
		switch i % 3 {
		case 0:
			_ = a.Put(key, "v")
			want["a"]++
		case 1:
			_ = ab.Add(key, "v")
			want["ab"]++
		case 2:
			_ = ff.Put(key, "uk", "v")
			want["\xff\xff"]++
		}
	}
	if err := b.db.Flush(); err != nil {
		t.Fatal(err)
	}

	keys := rawKeys(t, b)
	lastGroup := -1
	seenInGroup := map[string]bool{}
	lastName := ""
	var lastKey []byte
	metas := 0
	for _, rk := range keys {
		if rk[0] == metaPrefix {
			metas++
			continue
		}
		if metas > 0 {
			t.Fatalf("state entry %q after the meta entries", rk)
		}
		pk, err := parseKey(rk)
		if err != nil {
			t.Fatal(err)
		}
		if pk.group < lastGroup {
			t.Fatalf("key group %d after key group %d: key groups are not contiguous spans", pk.group, lastGroup)
		}
		if pk.group > lastGroup {
			lastGroup, lastName, lastKey = pk.group, "", nil
			clear(seenInGroup)
		}
		if name := string(pk.name); name != lastName {
			if seenInGroup[name] {
				t.Fatalf("key group %d: entries of state %q interleave with another state's", pk.group, name)
			}
			seenInGroup[name], lastName, lastKey = true, name, nil
		}
		if lastKey != nil && bytes.Compare(pk.key, lastKey) <= 0 {
			t.Fatalf("key group %d state %q: key %q after %q", pk.group, lastName, pk.key, lastKey)
		}
		lastKey = pk.key
		if want := append(appendGroup(nil, pk.group), newStateKeys(string(pk.name)).nameSeg...); !bytes.HasPrefix(rk, want) {
			t.Fatalf("key %q does not start with its group and name", rk)
		}
	}
	if metas != 3 {
		t.Fatalf("%d meta entries; want 3", metas)
	}

	// The span of a key group holds exactly its entries, of every state.
	for _, g := range []int{0, 5, 127} {
		lower, upper := groupSpan(KeyGroupRange{Start: g, End: g})
		for key := range dumpSpan(t, b.db, lower, upper) {
			if pk, _ := parseKey([]byte(key)); pk.group != g {
				t.Fatalf("span of key group %d holds key of group %d", g, pk.group)
			}
		}
	}

	// Iterating one state sees its entries only, in key-group order.
	count := map[string]int{}
	var groups []int
	_ = a.ForEach(func(k Key, _ string) error { count["a"]++; groups = append(groups, k.Group); return nil })
	_ = ab.ForEach(func(Key, []string) error { count["ab"]++; return nil })
	_ = ff.ForEach(func(Key, string, string) error { count["\xff\xff"]++; return nil })
	if !slices.IsSorted(groups) {
		t.Fatalf("ForEach visited key groups %v out of order", groups)
	}
	for name, n := range want {
		if count[name] != n {
			t.Errorf("state %q: ForEach saw %d entries; want %d", name, count[name], n)
		}
	}
}
