package operators

import (
	"strings"
	"testing"

	"github.com/flinkgo/flinkgo/runtime/window"
)

// everyOtherMinute is an assigner that is neither a session nor a slicer.
type everyOtherMinute struct{}

func (everyOtherMinute) AssignWindows(ts int64, dst []window.Window) []window.Window {
	start := ts - ts%120_000
	return append(dst, window.Window{Start: start, End: start + 60_000})
}

// An assigner the window operator has no case for is an error naming it,
// not a panic of an unchecked type assertion (issue 24, item 5d); each
// kind it runs is taken as what it is.
func TestWindowOperatorRefusesAnAssignerItCannotRun(t *testing.T) {
	if _, _, err := splitAssigner(everyOtherMinute{}); err == nil || !strings.Contains(err.Error(), "everyOtherMinute") {
		t.Fatalf("an unknown assigner: %v", err)
	}
	session, err := window.NewSession(1000)
	if err != nil {
		t.Fatal(err)
	}
	if _, slicer, err := splitAssigner(session); err != nil || slicer != nil {
		t.Errorf("a session: slicer %v, %v", slicer, err)
	}
	tumble, err := window.NewTumble(1000, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, slicer, err := splitAssigner(tumble); err != nil || slicer == nil {
		t.Errorf("a tumble: slicer %v, %v", slicer, err)
	}
}
