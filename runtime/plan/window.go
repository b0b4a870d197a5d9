package plan

import (
	"fmt"
	"strings"

	"github.com/flinkgo/flinkgo/runtime/window"
)

// WindowAssigner validates a window aggregation's window and returns its
// assigner (window.Tumble, Hop, Cumulate or Session), with Flink's rules
// on sizes, slides, steps, gaps and offsets.
func WindowAssigner(w *WindowAggregate) (window.Assigner, error) {
	switch w.Kind {
	case Tumble:
		return window.NewTumble(w.SizeMs, w.OffsetMs)
	case Hop:
		return window.NewHop(w.SizeMs, w.SlideMs, w.OffsetMs)
	case Cumulate:
		return window.NewCumulate(w.StepMs, w.SizeMs, w.OffsetMs)
	case Session:
		if w.OffsetMs != 0 {
			return nil, fmt.Errorf("window: a session window has no offset (it got %dms)", w.OffsetMs)
		}
		return window.NewSession(w.GapMs)
	}
	return nil, fmt.Errorf("window: unknown window kind %d (tumble, hop, cumulate or session)", int(w.Kind))
}

// explainWindow says what a window aggregation does.
func explainWindow(w *WindowAggregate) string {
	var what string
	switch w.Kind {
	case Tumble:
		what = fmt.Sprintf("tumble(%s, size %dms", w.TimeColumn, w.SizeMs)
	case Hop:
		what = fmt.Sprintf("hop(%s, size %dms, slide %dms", w.TimeColumn, w.SizeMs, w.SlideMs)
	case Cumulate:
		what = fmt.Sprintf("cumulate(%s, step %dms, size %dms", w.TimeColumn, w.StepMs, w.SizeMs)
	default:
		what = fmt.Sprintf("session(%s, gap %dms", w.TimeColumn, w.GapMs)
	}
	if w.OffsetMs != 0 {
		what += fmt.Sprintf(", offset %dms", w.OffsetMs)
	}
	what += ")"
	by := "over all rows (one subtask)"
	if len(w.Keys) > 0 {
		by = "per (" + strings.Join(w.Keys, ", ") + ")"
	}
	later := "later rows dropped and counted"
	if w.LateRows == KeepLateRows {
		later = "later rows to its late-rows output"
	}
	return fmt.Sprintf("windows %s %s; fires at window_end - 1 ms, allowed lateness %dms, %s",
		what, by, w.AllowedLatenessMs, later)
}
