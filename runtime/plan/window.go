package plan

import (
	"fmt"
	"strings"

	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
	"github.com/flinkgo/flinkgo/runtime/window"
)

// WindowAssigner validates a window aggregation's window and returns its
// assigner (window.Tumble, Hop, Cumulate or Session), with Flink's rules
// on sizes, slides, steps, gaps and offsets.
func WindowAssigner(w *planpb.WindowAggregate) (window.Assigner, error) {
	switch w.GetKind() {
	case planpb.WindowAggregate_TUMBLE:
		return window.NewTumble(w.GetSizeMs(), w.GetOffsetMs())
	case planpb.WindowAggregate_HOP:
		return window.NewHop(w.GetSizeMs(), w.GetSlideMs(), w.GetOffsetMs())
	case planpb.WindowAggregate_CUMULATE:
		return window.NewCumulate(w.GetStepMs(), w.GetSizeMs(), w.GetOffsetMs())
	case planpb.WindowAggregate_SESSION:
		if w.GetOffsetMs() != 0 {
			return nil, fmt.Errorf("window: a session window has no offset (it got %dms)", w.GetOffsetMs())
		}
		return window.NewSession(w.GetGapMs())
	}
	return nil, fmt.Errorf("window: unknown window kind %d (tumble, hop, cumulate or session)", int32(w.GetKind()))
}

// explainWindow says what a window aggregation does.
func explainWindow(w *planpb.WindowAggregate) string {
	var what string
	switch w.GetKind() {
	case planpb.WindowAggregate_TUMBLE:
		what = fmt.Sprintf("tumble(%s, size %dms", w.GetTimeColumn(), w.GetSizeMs())
	case planpb.WindowAggregate_HOP:
		what = fmt.Sprintf("hop(%s, size %dms, slide %dms", w.GetTimeColumn(), w.GetSizeMs(), w.GetSlideMs())
	case planpb.WindowAggregate_CUMULATE:
		what = fmt.Sprintf("cumulate(%s, step %dms, size %dms", w.GetTimeColumn(), w.GetStepMs(), w.GetSizeMs())
	default:
		what = fmt.Sprintf("session(%s, gap %dms", w.GetTimeColumn(), w.GetGapMs())
	}
	if w.GetOffsetMs() != 0 {
		what += fmt.Sprintf(", offset %dms", w.GetOffsetMs())
	}
	what += ")"
	by := "over all rows (one subtask)"
	if len(w.GetKeys()) > 0 {
		by = "per (" + strings.Join(w.GetKeys(), ", ") + ")"
	}
	later := "later rows dropped and counted"
	if w.GetLateRows() == planpb.WindowAggregate_KEEP {
		later = "later rows to its late-rows output"
	}
	return fmt.Sprintf("windows %s %s; fires at window_end - 1 ms, allowed lateness %dms, %s",
		what, by, w.GetAllowedLatenessMs(), later)
}
