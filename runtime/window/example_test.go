package window_test

import (
	"fmt"

	"github.com/flinkgo/flinkgo/runtime/window"
)

// A hop window of 10 s every 5 s, computed from 5 s slices: a row goes to
// one slice; when the watermark passes a window's end - 1, the window is the
// merge of its slices.
func ExampleSlicer() {
	hop, err := window.NewHop(10_000, 5_000, 0)
	if err != nil {
		panic(err)
	}
	var s window.Slicer = hop
	sliceEnd := s.SliceEnd(12_345)
	fmt.Println("slice", sliceEnd, "first window fires at", sliceEnd-1)
	_, _, parts := s.MergeSlices(20_000, nil)
	fmt.Println("window", window.Window{Start: s.WindowStart(20_000), End: 20_000}, "merges slices", parts)
	fmt.Println("then drop", s.ExpiredSlices(20_000, nil))
	next, _ := s.NextWindowEnd(20_000, false)
	fmt.Println("next window ends", next)
	// Output:
	// slice 15000 first window fires at 14999
	// window [10000, 20000) merges slices [20000 15000]
	// then drop [15000]
	// next window ends 25000
}

// Session windows of one key: a row opens [ts, ts+gap); a row that bridges
// two sessions merges them, and the merge says which state to fold into
// which.
func ExampleMergingSet() {
	session, _ := window.NewSession(3)
	set, _ := window.NewMergingSet(nil)
	for _, ts := range []int64{0, 5, 10, 8} {
		w := session.AssignWindows(ts, nil)[0]
		result, merge, merged := set.Add(w)
		state, _ := set.StateWindow(result)
		fmt.Println("row", ts, "-> window", result, "stored under", state)
		if merged {
			fmt.Println("  merged", merge.Merged, "; fold", merge.MergedStateWindows, "into", merge.StateWindow)
		}
	}
	// Output:
	// row 0 -> window [0, 3) stored under [0, 3)
	// row 5 -> window [5, 8) stored under [5, 8)
	// row 10 -> window [10, 13) stored under [10, 13)
	// row 8 -> window [5, 13) stored under [5, 8)
	//   merged [[5, 8) [10, 13)] ; fold [[10, 13)] into [5, 8)
}

// A window with allowed lateness: it fires at end - 1, a late row re-fires
// it until end - 1 + lateness, after which rows are dropped.
func ExampleWindowLate() {
	w := window.Window{Start: 0, End: 10_000}
	lateness := int64(2_000)
	for _, wm := range []int64{9_998, 9_999, 11_998, 11_999} {
		fmt.Println("watermark", wm, "fired", window.Fired(w.End, wm), "late", window.WindowLate(w.End, lateness, wm))
	}
	// Output:
	// watermark 9998 fired false late false
	// watermark 9999 fired true late false
	// watermark 11998 fired true late false
	// watermark 11999 fired true late true
}
