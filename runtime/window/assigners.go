package window

import (
	"fmt"
	"math"
)

// Assigner gives the windows a row belongs to.
type Assigner interface {
	// AssignWindows appends the windows holding ts to dst, in ascending
	// start order, and returns it.
	AssignWindows(ts int64, dst []Window) []Window
}

var (
	_ Assigner = Tumble{}
	_ Assigner = Hop{}
	_ Assigner = Cumulate{}
	_ Assigner = Session{}
)

// Tumble is a tumbling window: fixed size, no overlap, starting at
// multiples of the size shifted by the offset (Flink's
// TumblingEventTimeWindows and TUMBLE).
type Tumble struct {
	Size, Offset int64
}

// NewTumble validates a tumbling window of size (positive) and offset
// (smaller than the size in absolute value, as Flink requires), in ms.
func NewTumble(size, offset int64) (Tumble, error) {
	if size <= 0 {
		return Tumble{}, fmt.Errorf("window: tumble size is %dms; it must be positive", size)
	}
	if abs(offset) >= size {
		return Tumble{}, fmt.Errorf("window: tumble offset %dms must be smaller than the size %dms in absolute value "+
			"(abs(offset) < size, as Flink's; an offset of size+x gives the same windows as x)", offset, size)
	}
	return Tumble{Size: size, Offset: offset}, nil
}

// AssignWindows appends the one window holding ts.
func (t Tumble) AssignWindows(ts int64, dst []Window) []Window {
	start := Start(ts, t.Offset, t.Size)
	return append(dst, Window{Start: start, End: start + t.Size})
}

// Hop is a sliding (hopping) window: size Size, a new one every Slide
// (Flink's SlidingEventTimeWindows and HOP). Size must be a multiple of
// Slide, as Flink's slicing requires, so that windows are unions of slices.
type Hop struct {
	Size, Slide, Offset int64
}

// NewHop validates a hopping window: size and slide positive, size a
// multiple of slide, abs(offset) < slide (ms).
func NewHop(size, slide, offset int64) (Hop, error) {
	if size <= 0 || slide <= 0 {
		return Hop{}, fmt.Errorf("window: hop size %dms and slide %dms must both be positive", size, slide)
	}
	if size%slide != 0 {
		return Hop{}, fmt.Errorf("window: hop size %dms is not a multiple of the slide %dms; a hop window is made of slices "+
			"of one slide, so the size must be k × slide (Flink's sliced HOP requires it), e.g. size %s",
			size, slide, nearMultiples(size, slide))
	}
	if abs(offset) >= slide {
		return Hop{}, fmt.Errorf("window: hop offset %dms must be smaller than the slide %dms in absolute value "+
			"(abs(offset) < slide, as Flink's)", offset, slide)
	}
	return Hop{Size: size, Slide: slide, Offset: offset}, nil
}

// AssignWindows appends the Size/Slide windows holding ts.
func (h Hop) AssignWindows(ts int64, dst []Window) []Window {
	lastStart := Start(ts, h.Offset, h.Slide)
	first := lastStart - (h.Size/h.Slide-1)*h.Slide
	for start := first; start <= lastStart; start += h.Slide {
		dst = append(dst, Window{Start: start, End: start + h.Size})
	}
	return dst
}

// Cumulate is a cumulating window (Flink's CUMULATE): windows of a period
// MaxSize, each emitted every Step as it grows: [start, start+Step),
// [start, start+2·Step), ..., [start, start+MaxSize). MaxSize must be a
// multiple of Step.
type Cumulate struct {
	Step, MaxSize, Offset int64
}

// NewCumulate validates a cumulating window: step and max size positive,
// max size a multiple of step, abs(offset) < max size (ms).
func NewCumulate(step, maxSize, offset int64) (Cumulate, error) {
	if step <= 0 || maxSize <= 0 {
		return Cumulate{}, fmt.Errorf("window: cumulate step %dms and size %dms must both be positive", step, maxSize)
	}
	if maxSize%step != 0 {
		return Cumulate{}, fmt.Errorf("window: cumulate size %dms is not a multiple of the step %dms; the size must be "+
			"k × step (Flink's CUMULATE requires it), e.g. size %s", maxSize, step, nearMultiples(maxSize, step))
	}
	if abs(offset) >= maxSize {
		return Cumulate{}, fmt.Errorf("window: cumulate offset %dms must be smaller than the size %dms in absolute value", offset, maxSize)
	}
	return Cumulate{Step: step, MaxSize: maxSize, Offset: offset}, nil
}

// AssignWindows appends the windows of ts's period that hold ts: those
// ending after ts.
func (c Cumulate) AssignWindows(ts int64, dst []Window) []Window {
	start := Start(ts, c.Offset, c.MaxSize)
	for end := Start(ts, c.Offset, c.Step) + c.Step; end <= start+c.MaxSize; end += c.Step {
		dst = append(dst, Window{Start: start, End: end})
	}
	return dst
}

// Session is a session window: a row opens [ts, ts+Gap), and windows that
// intersect or touch merge (Flink's EventTimeSessionWindows and SESSION).
// Merging is MergingSet's job.
type Session struct {
	Gap int64
}

// NewSession validates a session gap (positive, ms).
func NewSession(gap int64) (Session, error) {
	if gap <= 0 {
		return Session{}, fmt.Errorf("window: session gap is %dms; it must be positive", gap)
	}
	return Session{Gap: gap}, nil
}

// AssignWindows appends [ts, ts+Gap) (its end saturates at the greatest
// time).
func (s Session) AssignWindows(ts int64, dst []Window) []Window {
	return append(dst, Window{Start: ts, End: saturatingAdd(ts, s.Gap)})
}

// nearMultiples names the multiples of unit next to x, for an error.
func nearMultiples(x, unit int64) string {
	below := x / unit * unit
	if below == 0 {
		return fmt.Sprintf("%dms", unit)
	}
	return fmt.Sprintf("%dms or %dms", below, below+unit)
}

func abs(x int64) int64 {
	if x < 0 {
		if x == math.MinInt64 {
			return math.MaxInt64
		}
		return -x
	}
	return x
}
