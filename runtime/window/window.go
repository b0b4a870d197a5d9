package window

import (
	"fmt"
	"math"
)

// Window is the event-time interval [Start, End), as Flink's TimeWindow.
type Window struct {
	Start, End int64
}

// String prints the interval.
func (w Window) String() string { return fmt.Sprintf("[%d, %d)", w.Start, w.End) }

// MaxTimestamp is the last millisecond inside the window (End - 1): its
// event-time timer fires when the watermark reaches it.
func (w Window) MaxTimestamp() int64 { return w.End - 1 }

// Intersects says whether the windows overlap or touch (one ends where the
// other starts), as Flink's TimeWindow.intersects: session windows that
// touch merge.
func (w Window) Intersects(o Window) bool { return w.Start <= o.End && w.End >= o.Start }

// Cover is the smallest window holding both.
func (w Window) Cover(o Window) Window {
	return Window{Start: min(w.Start, o.Start), End: max(w.End, o.End)}
}

// Start is the start of the window of the given size and offset that holds
// ts (Flink's TimeWindow.getWindowStartWithOffset, the version that is right
// for timestamps before the epoch): the greatest start <= ts with
// start ≡ offset (mod size). size must be positive.
func Start(ts, offset, size int64) int64 {
	remainder := (ts - offset) % size
	if remainder < 0 {
		remainder += size
	}
	return ts - remainder
}

// Fired says whether a window ending at end has fired at watermark: the
// watermark reached End - 1.
func Fired(end, watermark int64) bool { return watermark >= end-1 }

// CleanupTime is when a window's state is dropped: End - 1 + allowed
// lateness, saturating at the greatest time (Flink's
// WindowOperator.cleanupTime).
func CleanupTime(end, allowedLateness int64) int64 {
	return saturatingAdd(end-1, allowedLateness)
}

// WindowLate says whether a window is past its allowed lateness at
// watermark: its cleanup time is at or below the watermark, so a row for it
// is dropped (Flink's WindowOperator.isWindowLate). A late row for a window
// that is not yet late updates it and fires it again.
func WindowLate(end, allowedLateness, watermark int64) bool {
	return CleanupTime(end, allowedLateness) <= watermark
}

// RowLate says whether a row with timestamp ts is late at watermark: ts +
// allowed lateness is at or below the watermark (Flink's
// WindowOperator.isElementLate, which decides whether a row that no window
// took is counted in numLateRecordsDropped or sent to the late side output).
func RowLate(ts, allowedLateness, watermark int64) bool {
	return saturatingAdd(ts, allowedLateness) <= watermark
}

// saturatingAdd adds a non-negative b to a without overflowing.
func saturatingAdd(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
