package window

// Slicer splits windows into slices (panes), as the slice assigners of
// Flink's table runtime: a row goes to exactly one slice, named by its
// exclusive end, so a row costs O(1) whatever size/slide is; a window is
// computed from its slices when it fires.
//
// The operator's cycle, per key (Flink's SlicingWindowProcessor):
//
//   - a row with timestamp ts goes to slice SliceEnd(ts), and registers an
//     event-time timer at that slice's first window end (the slice end) - 1;
//   - if the slice's first window already fired (Fired(sliceEnd, wm)), the
//     row is dropped when its last window fired too
//     (FirstUnfiredWindowEnd reports none); otherwise it goes to slice
//     LateRowSlice(sliceEnd) and registers a timer at the first unfired
//     window's end - 1;
//   - when the timer of window end e fires: merge the slices MergeSlices(e)
//     gives (into its target's state when it has one) and emit the window
//     [WindowStart(e), e); drop ExpiredSlices(e); register the timer of
//     NextWindowEnd(e, emptyWindow) if there is one.
type Slicer interface {
	// SliceEnd is the end of the slice that holds ts.
	SliceEnd(ts int64) int64
	// SliceSize is the length of a slice, which is also the distance
	// between consecutive window ends.
	SliceSize() int64
	// WindowStart is the start of the window that ends at windowEnd.
	WindowStart(windowEnd int64) int64
	// LastWindowEnd is the end of the last window that the slice ending at
	// sliceEnd belongs to.
	LastWindowEnd(sliceEnd int64) int64
	// MergeSlices says how to compute the window ending at windowEnd: merge
	// slices (appended to dst, newest first) into the state of target when
	// hasTarget (the slices' state is shared: cumulate keeps a running
	// total in its first slice), or into a fresh accumulator otherwise.
	MergeSlices(windowEnd int64, dst []int64) (target int64, hasTarget bool, slices []int64)
	// ExpiredSlices appends to dst the slices no later window needs once
	// the window ending at windowEnd has fired.
	ExpiredSlices(windowEnd int64, dst []int64) []int64
	// NextWindowEnd is the next window to fire for the key after the one
	// ending at windowEnd, if any; windowEmpty says whether that window had
	// no rows (a hop window after an empty one has none either).
	NextWindowEnd(windowEnd int64, windowEmpty bool) (int64, bool)
	// LateRowSlice is the slice whose state takes a row of slice sliceEnd
	// after that slice's first window has fired (for cumulate, its period's
	// first slice, where the running total is).
	LateRowSlice(sliceEnd int64) int64
}

var (
	_ Slicer = Tumble{}
	_ Slicer = Hop{}
	_ Slicer = Cumulate{}
)

// FirstUnfiredWindowEnd is the end of the first window of the slice ending
// at sliceEnd that has not fired at watermark, or false when all of them
// have (the row is late for every window). It costs O(1).
func FirstUnfiredWindowEnd(s Slicer, sliceEnd, watermark int64) (int64, bool) {
	if !Fired(sliceEnd, watermark) {
		return sliceEnd, true
	}
	last := s.LastWindowEnd(sliceEnd)
	if Fired(last, watermark) {
		return 0, false
	}
	// The first end e = sliceEnd + k·SliceSize with e - 1 > watermark; here
	// watermark < last - 1, so watermark + 2 cannot overflow.
	size := s.SliceSize()
	k := (watermark + 2 - sliceEnd + size - 1) / size
	return sliceEnd + k*size, true
}

// Tumble: a slice is the window itself.

// SliceEnd is the end of the window holding ts.
func (t Tumble) SliceEnd(ts int64) int64 { return Start(ts, t.Offset, t.Size) + t.Size }

// SliceSize is the window size.
func (t Tumble) SliceSize() int64 { return t.Size }

// WindowStart is windowEnd - size.
func (t Tumble) WindowStart(windowEnd int64) int64 { return windowEnd - t.Size }

// LastWindowEnd is the slice's own end.
func (t Tumble) LastWindowEnd(sliceEnd int64) int64 { return sliceEnd }

// MergeSlices is the window's one slice.
func (t Tumble) MergeSlices(windowEnd int64, dst []int64) (int64, bool, []int64) {
	return 0, false, append(dst, windowEnd)
}

// ExpiredSlices is the window's one slice.
func (t Tumble) ExpiredSlices(windowEnd int64, dst []int64) []int64 { return append(dst, windowEnd) }

// NextWindowEnd is none: every tumbling window's timer is registered by its
// rows.
func (t Tumble) NextWindowEnd(int64, bool) (int64, bool) { return 0, false }

// LateRowSlice is the slice itself.
func (t Tumble) LateRowSlice(sliceEnd int64) int64 { return sliceEnd }

// Hop: slices of one slide; a window is the Size/Slide slices ending at its
// end.

// SliceEnd is the end of the slide-long slice holding ts.
func (h Hop) SliceEnd(ts int64) int64 { return Start(ts, h.Offset, h.Slide) + h.Slide }

// SliceSize is the slide.
func (h Hop) SliceSize() int64 { return h.Slide }

// WindowStart is windowEnd - size.
func (h Hop) WindowStart(windowEnd int64) int64 { return windowEnd - h.Size }

// LastWindowEnd: a slice is in the windows ending at sliceEnd, sliceEnd +
// slide, ..., sliceEnd - slide + size.
func (h Hop) LastWindowEnd(sliceEnd int64) int64 { return sliceEnd - h.Slide + h.Size }

// MergeSlices is the window's Size/Slide slices, newest first, merged into
// a fresh accumulator.
func (h Hop) MergeSlices(windowEnd int64, dst []int64) (int64, bool, []int64) {
	for i, n := int64(0), h.Size/h.Slide; i < n; i++ {
		dst = append(dst, windowEnd-i*h.Slide)
	}
	return 0, false, dst
}

// ExpiredSlices is the window's first slice: no later window holds it.
func (h Hop) ExpiredSlices(windowEnd int64, dst []int64) []int64 {
	return append(dst, h.WindowStart(windowEnd)+h.Slide)
}

// NextWindowEnd is windowEnd + slide unless the window was empty.
func (h Hop) NextWindowEnd(windowEnd int64, windowEmpty bool) (int64, bool) {
	if windowEmpty {
		return 0, false
	}
	return windowEnd + h.Slide, true
}

// LateRowSlice is the slice itself: hop slices are never merged in place.
func (h Hop) LateRowSlice(sliceEnd int64) int64 { return sliceEnd }

// Cumulate: slices of one step; the first slice of a period holds the
// running total, into which each later slice is merged as its window fires.

// SliceEnd is the end of the step-long slice holding ts.
func (c Cumulate) SliceEnd(ts int64) int64 { return Start(ts, c.Offset, c.Step) + c.Step }

// SliceSize is the step.
func (c Cumulate) SliceSize() int64 { return c.Step }

// WindowStart is the start of windowEnd's period.
func (c Cumulate) WindowStart(windowEnd int64) int64 { return Start(windowEnd-1, c.Offset, c.MaxSize) }

// LastWindowEnd is the end of the slice's period.
func (c Cumulate) LastWindowEnd(sliceEnd int64) int64 { return c.WindowStart(sliceEnd) + c.MaxSize }

// MergeSlices merges the slice ending at windowEnd into the period's first
// slice (nothing to merge when it is the first).
func (c Cumulate) MergeSlices(windowEnd int64, dst []int64) (int64, bool, []int64) {
	first := c.firstSliceEnd(windowEnd)
	if windowEnd != first {
		dst = append(dst, windowEnd)
	}
	return first, true, dst
}

// ExpiredSlices is the slice just merged, except the first slice, which
// keeps the running total until the period's last window, when it goes too.
// (Flink's keeps the first slice when step equals the size; here it goes,
// as no later window needs it.)
func (c Cumulate) ExpiredSlices(windowEnd int64, dst []int64) []int64 {
	first := c.firstSliceEnd(windowEnd)
	last := c.WindowStart(windowEnd) + c.MaxSize
	switch {
	case windowEnd == last && first != last:
		return append(dst, windowEnd, first)
	case windowEnd == last:
		return append(dst, windowEnd)
	case windowEnd == first:
		return dst
	}
	return append(dst, windowEnd)
}

// NextWindowEnd is windowEnd + step within the period; a cumulating window
// fires every step of its period, empty or not.
func (c Cumulate) NextWindowEnd(windowEnd int64, _ bool) (int64, bool) {
	next := windowEnd + c.Step
	if next > c.WindowStart(windowEnd)+c.MaxSize {
		return 0, false
	}
	return next, true
}

// LateRowSlice is the period's first slice, which holds the running total.
func (c Cumulate) LateRowSlice(sliceEnd int64) int64 { return c.firstSliceEnd(sliceEnd) }

func (c Cumulate) firstSliceEnd(sliceEnd int64) int64 { return c.WindowStart(sliceEnd) + c.Step }
