package window

import (
	"fmt"
	"slices"
	"sort"
)

// MergingSet is the session windows in flight for one key, as Flink's
// MergingWindowSet with TimeWindow.mergeWindows: adding a window merges it
// with every window it intersects or touches. Each window in flight keeps a
// state window: the window under whose name its contents are stored, kept
// when the window grows so that merging moves as little state as possible.
//
// The windows in flight never intersect or touch one another, so a window
// added merges with a run of neighbours found by binary search: O(log n)
// plus the merged ones.
type MergingSet struct {
	// inFlight is sorted by start (and so by end).
	inFlight []Mapping
}

// Mapping is a window in flight and its state window.
type Mapping struct {
	Window      Window
	StateWindow Window
}

// Merge reports a merge that Add performed, for the operator to merge
// state: the contents stored under MergedStateWindows go into StateWindow,
// which from now on holds Result's contents; the timers of Merged windows
// are deleted and Result's registered.
type Merge struct {
	// Result is the merged window, now in flight.
	Result Window
	// Merged are the windows in flight that Result replaced (the window
	// added is not among them: it had no state).
	Merged []Window
	// StateWindow holds Result's contents: the state window of one of
	// Merged (the earliest).
	StateWindow Window
	// MergedStateWindows are the state windows of the other Merged windows,
	// whose contents must be merged into StateWindow and then cleared.
	MergedStateWindows []Window
}

// NewMergingSet restores a set from its Mappings (nil: empty). Mappings
// whose windows intersect or touch, or are empty, are an error: they
// cannot come from a MergingSet.
func NewMergingSet(mappings []Mapping) (*MergingSet, error) {
	s := &MergingSet{inFlight: slices.Clone(mappings)}
	slices.SortFunc(s.inFlight, func(a, b Mapping) int { return compareInt64(a.Window.Start, b.Window.Start) })
	for i, m := range s.inFlight {
		if m.Window.End <= m.Window.Start {
			return nil, fmt.Errorf("window: restored session window %v is empty", m.Window)
		}
		if i > 0 && s.inFlight[i-1].Window.Intersects(m.Window) {
			return nil, fmt.Errorf("window: restored session windows %v and %v intersect; they should have been merged",
				s.inFlight[i-1].Window, m.Window)
		}
	}
	return s, nil
}

// Len is the number of windows in flight.
func (s *MergingSet) Len() int { return len(s.inFlight) }

// Mappings returns a copy of the windows in flight and their state
// windows, by start, for the operator to persist.
func (s *MergingSet) Mappings() []Mapping { return slices.Clone(s.inFlight) }

// StateWindow returns the state window of window w in flight.
func (s *MergingSet) StateWindow(w Window) (Window, bool) {
	if i, ok := s.find(w); ok {
		return s.inFlight[i].StateWindow, true
	}
	return Window{}, false
}

// Retire removes window w (it fired and was cleaned up). A window not in
// flight is an error.
func (s *MergingSet) Retire(w Window) error {
	i, ok := s.find(w)
	if !ok {
		return fmt.Errorf("window: session window %v is not in flight", w)
	}
	s.inFlight = slices.Delete(s.inFlight, i, i+1)
	return nil
}

// Add puts window w in flight and returns the window that now holds it: w
// itself, the window in flight that covers it, or the merged window. When
// windows in flight merged, merged reports how (ok true); add the row's
// contents to the returned window's state window after merging state.
func (s *MergingSet) Add(w Window) (result Window, merged Merge, ok bool) {
	// The windows in flight that w intersects or touches are the run
	// [lo, hi): ends >= w.Start and starts <= w.End.
	lo := sort.Search(len(s.inFlight), func(i int) bool { return s.inFlight[i].Window.End >= w.Start })
	hi := sort.Search(len(s.inFlight), func(i int) bool { return s.inFlight[i].Window.Start > w.End })
	if lo >= hi {
		s.inFlight = slices.Insert(s.inFlight, lo, Mapping{Window: w, StateWindow: w})
		return w, Merge{}, false
	}
	result = w
	for _, m := range s.inFlight[lo:hi] {
		result = result.Cover(m.Window)
	}
	if hi-lo == 1 && s.inFlight[lo].Window == result {
		return result, Merge{}, false // w lies inside a window in flight
	}
	merged = Merge{Result: result, StateWindow: s.inFlight[lo].StateWindow}
	for i, m := range s.inFlight[lo:hi] {
		merged.Merged = append(merged.Merged, m.Window)
		if i > 0 {
			merged.MergedStateWindows = append(merged.MergedStateWindows, m.StateWindow)
		}
	}
	s.inFlight[lo] = Mapping{Window: result, StateWindow: merged.StateWindow}
	s.inFlight = slices.Delete(s.inFlight, lo+1, hi)
	return result, merged, true
}

func (s *MergingSet) find(w Window) (int, bool) {
	i := sort.Search(len(s.inFlight), func(i int) bool { return s.inFlight[i].Window.Start >= w.Start })
	return i, i < len(s.inFlight) && s.inFlight[i].Window == w
}

func compareInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// MergeGroup is a set of windows that intersect or touch, transitively, and
// the window covering them.
type MergeGroup struct {
	Result  Window
	Members []Window
}

// MergeWindows groups windows that intersect or touch (transitively), as
// Flink's TimeWindow.mergeWindows, and returns every group by start, single
// windows included (Flink calls back only for groups of more than one). An
// operator can use it to merge a batch's session windows per key before
// adding the groups to the key's MergingSet. windows is not modified.
func MergeWindows(windows []Window) []MergeGroup {
	sorted := slices.Clone(windows)
	slices.SortFunc(sorted, func(a, b Window) int { return compareInt64(a.Start, b.Start) })
	var groups []MergeGroup
	for _, w := range sorted {
		if n := len(groups); n > 0 && groups[n-1].Result.Intersects(w) {
			groups[n-1].Result = groups[n-1].Result.Cover(w)
			groups[n-1].Members = append(groups[n-1].Members, w)
			continue
		}
		groups = append(groups, MergeGroup{Result: w, Members: []Window{w}})
	}
	return groups
}
