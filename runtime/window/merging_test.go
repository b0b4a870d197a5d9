package window

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// add is one MergingSet.Add and what it must answer.
type add struct {
	w      Window
	result Window
	merge  *Merge // nil: no merge
}

func w(start, end int64) Window { return Window{start, end} }

// The vectors of Flink's MergingWindowSetTest (session gap 3). Where Flink
// allows any of the merged windows' state windows, this set picks the
// earliest window's, so the expected value is that one.
func TestMergingSetFlinkVectors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		adds  []add
		state map[Window]Window // state windows after the adds
	}{
		{"incremental merging", []add{
			{w: w(0, 4), result: w(0, 4)},
			{w: w(0, 4), result: w(0, 4)},
			{w: w(3, 5), result: w(0, 5), merge: &Merge{Result: w(0, 5), Merged: []Window{w(0, 4)}, StateWindow: w(0, 4)}},
			{w: w(4, 6), result: w(0, 6), merge: &Merge{Result: w(0, 6), Merged: []Window{w(0, 5)}, StateWindow: w(0, 4)}},
			// windows that fall into the merged region
			{w: w(1, 4), result: w(0, 6)}, {w: w(0, 4), result: w(0, 6)},
			{w: w(3, 5), result: w(0, 6)}, {w: w(4, 6), result: w(0, 6)},
			// a second bunch
			{w: w(11, 14), result: w(11, 14)},
			{w: w(10, 13), result: w(10, 14), merge: &Merge{Result: w(10, 14), Merged: []Window{w(11, 14)}, StateWindow: w(11, 14)}},
			{w: w(12, 15), result: w(10, 15), merge: &Merge{Result: w(10, 15), Merged: []Window{w(10, 14)}, StateWindow: w(11, 14)}},
			{w: w(11, 14), result: w(10, 15)},
		}, map[Window]Window{w(0, 6): w(0, 4), w(10, 15): w(11, 14)}},
		{"late merging", []add{
			{w: w(0, 3), result: w(0, 3)}, {w: w(5, 8), result: w(5, 8)}, {w: w(10, 13), result: w(10, 13)},
			// touches both later windows: they merge
			{w: w(8, 10), result: w(5, 13), merge: &Merge{Result: w(5, 13), Merged: []Window{w(5, 8), w(10, 13)},
				StateWindow: w(5, 8), MergedStateWindows: []Window{w(10, 13)}}},
			{w: w(5, 8), result: w(5, 13)}, {w: w(8, 10), result: w(5, 13)}, {w: w(10, 13), result: w(5, 13)},
			// merges all of them
			{w: w(3, 5), result: w(0, 13), merge: &Merge{Result: w(0, 13), Merged: []Window{w(0, 3), w(5, 13)},
				StateWindow: w(0, 3), MergedStateWindows: []Window{w(5, 8)}}},
		}, map[Window]Window{w(0, 13): w(0, 3)}},
		{"a large window covering one", []add{
			{w: w(1, 2), result: w(1, 2)},
			{w: w(0, 3), result: w(0, 3), merge: &Merge{Result: w(0, 3), Merged: []Window{w(1, 2)}, StateWindow: w(1, 2)}},
		}, map[Window]Window{w(0, 3): w(1, 2)}},
		{"identical windows do not merge", []add{
			{w: w(1, 2), result: w(1, 2)}, {w: w(1, 2), result: w(1, 2)},
		}, map[Window]Window{w(1, 2): w(1, 2)}},
		{"a large window covering several", []add{
			{w: w(1, 3), result: w(1, 3)}, {w: w(5, 8), result: w(5, 8)}, {w: w(10, 13), result: w(10, 13)},
			{w: w(0, 13), result: w(0, 13), merge: &Merge{Result: w(0, 13), Merged: []Window{w(1, 3), w(5, 8), w(10, 13)},
				StateWindow: w(1, 3), MergedStateWindows: []Window{w(5, 8), w(10, 13)}}},
		}, map[Window]Window{w(0, 13): w(1, 3)}},
		{"windows that neither touch nor overlap stay apart", []add{
			{w: w(0, 3), result: w(0, 3)}, {w: w(4, 7), result: w(4, 7)}, {w: w(-4, -1), result: w(-4, -1)},
		}, map[Window]Window{w(-4, -1): w(-4, -1), w(0, 3): w(0, 3), w(4, 7): w(4, 7)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := NewMergingSet(nil)
			if err != nil {
				t.Fatal(err)
			}
			for i, a := range tc.adds {
				result, merge, merged := s.Add(a.w)
				if result != a.result {
					t.Fatalf("add %d %v: result %v, want %v", i, a.w, result, a.result)
				}
				if merged != (a.merge != nil) {
					t.Fatalf("add %d %v: merged %v (%+v), want %v", i, a.w, merged, merge, a.merge != nil)
				}
				if a.merge != nil && !mergeEqual(merge, *a.merge) {
					t.Fatalf("add %d %v: merge %+v, want %+v", i, a.w, merge, *a.merge)
				}
			}
			if s.Len() != len(tc.state) {
				t.Fatalf("%d windows in flight, want %d: %v", s.Len(), len(tc.state), s.Mappings())
			}
			for win, state := range tc.state {
				if got, ok := s.StateWindow(win); !ok || got != state {
					t.Fatalf("state window of %v = %v, %v; want %v", win, got, ok, state)
				}
			}
		})
	}
}

func mergeEqual(a, b Merge) bool {
	return a.Result == b.Result && a.StateWindow == b.StateWindow &&
		slices.Equal(a.Merged, b.Merged) && slices.Equal(a.MergedStateWindows, b.MergedStateWindows)
}

// Flink's testIncrementalMerging ends by retiring a window; testPersist and
// testRestoreFromState persist and restore the mappings.
func TestMergingSetRetirePersistRestore(t *testing.T) {
	s, _ := NewMergingSet(nil)
	s.Add(w(1, 2))
	s.Add(w(17, 42))
	want := []Mapping{{w(1, 2), w(1, 2)}, {w(17, 42), w(17, 42)}}
	if got := s.Mappings(); !slices.Equal(got, want) {
		t.Fatalf("mappings %v, want %v", got, want)
	}
	if err := s.Retire(w(1, 2)); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.StateWindow(w(1, 2)); ok {
		t.Fatal("retired window still in flight")
	}
	if err := s.Retire(w(1, 2)); err == nil {
		t.Fatal("retiring a window not in flight succeeded")
	}

	restored, err := NewMergingSet([]Mapping{{w(17, 42), w(42, 17)}, {w(1, 2), w(3, 4)}})
	if err != nil {
		t.Fatal(err)
	}
	for win, state := range map[Window]Window{w(17, 42): w(42, 17), w(1, 2): w(3, 4)} {
		if got, ok := restored.StateWindow(win); !ok || got != state {
			t.Fatalf("restored state window of %v = %v, want %v", win, got, state)
		}
	}
	for _, bad := range [][]Mapping{
		{{w(0, 5), w(0, 5)}, {w(5, 8), w(5, 8)}}, // touching
		{{w(3, 3), w(3, 3)}},                     // empty
	} {
		if _, err := NewMergingSet(bad); err == nil {
			t.Errorf("restoring %v succeeded", bad)
		}
	}
}

// On random sessions, the set matches the definition: the windows in
// flight are the connected components of every window added (intersecting
// or touching), and every merged-away state window is reported once.
func TestMergingSetMatchesDefinition(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for round := 0; round < 200; round++ {
		s, _ := NewMergingSet(nil)
		sess := Session{Gap: 1 + rng.Int64N(10)}
		var added []Window
		live := map[Window]bool{} // state windows holding contents
		for i := 0; i < 40; i++ {
			win := sess.AssignWindows(rng.Int64N(300), nil)[0]
			added = append(added, win)
			result, merge, merged := s.Add(win)
			if merged {
				if merge.Result != result || !live[merge.StateWindow] {
					t.Fatalf("merge %+v: bad result or dead state window", merge)
				}
				for _, m := range merge.MergedStateWindows {
					if !live[m] || m == merge.StateWindow {
						t.Fatalf("merge %+v: state window %v merged twice or into itself", merge, m)
					}
					delete(live, m)
				}
			}
			state, ok := s.StateWindow(result)
			if !ok {
				t.Fatalf("result %v not in flight", result)
			}
			live[state] = true
			if result.Start > win.Start || result.End < win.End {
				t.Fatalf("result %v does not hold %v", result, win)
			}
		}
		if len(live) != s.Len() {
			t.Fatalf("%d live state windows for %d windows in flight", len(live), s.Len())
		}
		// Connected components of the added windows, by sweeping by start.
		slices.SortFunc(added, func(a, b Window) int { return compareInt64(a.Start, b.Start) })
		var want []Window
		for _, a := range added {
			if n := len(want); n > 0 && want[n-1].Intersects(a) {
				want[n-1] = want[n-1].Cover(a)
			} else {
				want = append(want, a)
			}
		}
		var got []Window
		for _, m := range s.Mappings() {
			got = append(got, m.Window)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("windows in flight %v, want %v", got, want)
		}
	}
}

// The vectors of Flink's EventTimeSessionWindowsTest (mergeWindows).
func TestMergeWindowsFlinkVectors(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []Window
		want []MergeGroup
	}{
		{"single point window", []Window{w(0, 0)}, []MergeGroup{{w(0, 0), []Window{w(0, 0)}}}},
		{"single window", []Window{w(0, 1)}, []MergeGroup{{w(0, 1), []Window{w(0, 1)}}}},
		{"consecutive windows", []Window{w(0, 1), w(1, 2), w(2, 3), w(4, 5), w(5, 6)}, []MergeGroup{
			{w(0, 3), []Window{w(0, 1), w(1, 2), w(2, 3)}},
			{w(4, 6), []Window{w(4, 5), w(5, 6)}},
		}},
		{"covering windows", []Window{w(1, 1), w(0, 2), w(4, 7), w(5, 6)}, []MergeGroup{
			{w(0, 2), []Window{w(0, 2), w(1, 1)}},
			{w(4, 7), []Window{w(4, 7), w(5, 6)}},
		}},
		{"none", nil, nil},
	} {
		got := MergeWindows(tc.in)
		if !slices.EqualFunc(got, tc.want, func(a, b MergeGroup) bool {
			return a.Result == b.Result && slices.Equal(a.Members, b.Members)
		}) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
