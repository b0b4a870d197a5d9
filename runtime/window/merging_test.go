package window

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// The cases of Flink's MergingWindowSetTest and EventTimeSessionWindowsTest
// are in testdata/sessions.

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
