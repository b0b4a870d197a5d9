package state

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// checkRegistered fails t when a file of a registered checkpoint is missing.
func checkRegistered(t *testing.T, st Storage, registered map[int64][]Handle) {
	t.Helper()
	for id, hs := range registered {
		for _, h := range hs {
			for _, f := range h.Files {
				if _, err := os.Stat(filepath.Join(st.Root, filepath.FromSlash(f.Path))); err != nil {
					t.Fatalf("file %s of registered checkpoint %d: %v", f.Path, id, err)
				}
			}
		}
	}
}

func sharedDirFiles(t *testing.T, st Storage) []string {
	t.Helper()
	entries, err := os.ReadDir(st.SharedDir())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, sharedPrefix+e.Name())
	}
	return names
}

func TestSharedRegistryRetention(t *testing.T) {
	st := initStorage(t)
	reg := NewSharedRegistry(st)
	var backends []*Backend
	var states []testStates
	for i, r := range []KeyGroupRange{{Start: 0, End: 63}, {Start: 64, End: 127}} {
		o := testOptions(t, r)
		o.Subtask = i
		o.MemTableSize = 256 << 10 // several sstables per checkpoint
		b := openBackend(t, o)
		backends = append(backends, b)
		states = append(states, registerTestStates(t, b))
	}
	registered := map[int64][]Handle{}
	const retained = 2
	for id := int64(1); id <= 10; id++ {
		var hs []Handle
		for i, b := range backends {
			populate(t, b, states[i], 1500, int(id))
			if id%3 == 0 { // compaction replaces sstables
				if err := b.db.Compact(t.Context(), []byte{0}, []byte{0xff}, false); err != nil {
					t.Fatal(err)
				}
			}
			hs = append(hs, checkpoint(t, b, st, id))
		}
		if id == 5 {
			continue // aborted: persisted, never registered
		}
		if err := reg.Register(id, hs); err != nil {
			t.Fatal(err)
		}
		registered[id] = hs
		// Subsume the checkpoints beyond the retained ones.
		for _, old := range slices.Sorted(maps.Keys(registered)) {
			if len(registered) <= retained {
				break
			}
			if err := reg.Release(old); err != nil {
				t.Fatal(err)
			}
			if err := st.RemoveCheckpoint(old); err != nil {
				t.Fatal(err)
			}
			delete(registered, old)
		}
		checkRegistered(t, st, registered)
		// Every shared file referenced is counted.
		var want []string
		for _, hs := range registered {
			for _, h := range hs {
				want = append(want, h.SharedFiles()...)
			}
		}
		slices.Sort(want)
		if got := reg.Referenced(); !slices.Equal(got, slices.Compact(want)) {
			t.Fatalf("checkpoint %d: registry references %d files; handles %d", id, len(got), len(slices.Compact(want)))
		}
	}
	// Checkpoint 5's uploads are still there until a sweep.
	if got, ref := len(sharedDirFiles(t, st)), len(reg.Referenced()); got <= ref {
		t.Fatalf("shared dir has %d files, %d referenced: the aborted checkpoint's uploads are gone before Sweep", got, ref)
	}
	if err := reg.Sweep(); err != nil {
		t.Fatal(err)
	}
	checkRegistered(t, st, registered)
	if got, want := sharedDirFiles(t, st), reg.Referenced(); !slices.Equal(got, want) {
		t.Fatalf("after Sweep shared/ holds %d files, %d referenced", len(got), len(want))
	}
	// The retained checkpoint restores.
	last := registered[10]
	r := restoreBackend(t, testOptions(t, KeyGroupRange{Start: 0, End: 127}), st.Root, last)
	if len(contents(t, r)) == 0 {
		t.Fatal("restored nothing")
	}

	// A restart: a new registry from the retained checkpoints.
	reg2 := NewSharedRegistry(st)
	if err := reg2.Restore(registered); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(reg2.Referenced(), reg.Referenced()) || !slices.Equal(reg2.Checkpoints(), []int64{9, 10}) {
		t.Fatalf("restored registry: %v %v", reg2.Checkpoints(), reg2.Referenced())
	}
	for id := range registered {
		if err := reg2.Release(id); err != nil {
			t.Fatal(err)
		}
	}
	if err := reg2.Sweep(); err != nil {
		t.Fatal(err)
	}
	if got := sharedDirFiles(t, st); len(got) != 0 {
		t.Fatalf("shared/ not empty after releasing every checkpoint and sweeping: %v", got)
	}
}

func TestSharedRegistryRejectsBadPaths(t *testing.T) {
	st := initStorage(t)
	victim := filepath.Join(st.Root, "victim")
	if err := os.WriteFile(victim, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	reg := NewSharedRegistry(st)
	h := Handle{Files: []FileRef{{Name: "1.sst", Path: "shared/../victim", Shared: true}}}
	if err := reg.Register(1, []Handle{h}); !errors.Is(err, ErrIncompatibleHandle) {
		t.Fatalf("Register of a path outside shared/: %v", err)
	}
	if err := reg.Release(1); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(victim); err != nil {
		t.Fatal("registry deleted a file outside shared/")
	}
	// Registering a checkpoint twice adds up; a file shared by two handles of
	// one checkpoint counts once.
	f := FileRef{Name: "1.sst", Path: "shared/x-1.sst", Size: 0, Shared: true}
	if err := os.WriteFile(filepath.Join(st.SharedDir(), "x-1.sst"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_ = reg.Register(2, []Handle{{Files: []FileRef{f}}, {Files: []FileRef{f}}})
	_ = reg.Register(3, []Handle{{Files: []FileRef{f}}})
	_ = reg.Release(2)
	if _, err := os.Stat(filepath.Join(st.SharedDir(), "x-1.sst")); err != nil {
		t.Fatal("file still referenced by checkpoint 3 was deleted")
	}
	_ = reg.Release(3)
	if _, err := os.Stat(filepath.Join(st.SharedDir(), "x-1.sst")); !os.IsNotExist(err) {
		t.Fatal("unreferenced file not deleted")
	}
}
