package watermark

import (
	"fmt"
	"slices"
	"testing"
)

// recorder is an Output that writes what it receives as "W<ms>", "ACTIVE"
// and "IDLE", so a test states the expected sequence in one line.
type recorder struct{ got []string }

func (r *recorder) EmitWatermark(w Watermark) { r.got = append(r.got, "W"+w.String()) }
func (r *recorder) EmitStatus(s Status)       { r.got = append(r.got, s.String()) }

// events is the sequence e asks to send.
func events(e Emission) []string {
	var r recorder
	e.SendTo(&r)
	return r.got
}

// step is one input of a table test: a watermark or a status on a channel
// (or input, or split), and what must be sent in answer (nil: nothing).
type step struct {
	ch     int
	wm     Watermark // fed when status is ""
	status string    // "IDLE" or "ACTIVE" feeds a status instead
	want   []string
}

func wm(ch int, w Watermark, want ...string) step { return step{ch: ch, wm: w, want: want} }
func idle(ch int, want ...string) step            { return step{ch: ch, status: "IDLE", want: want} }
func active(ch int, want ...string) step          { return step{ch: ch, status: "ACTIVE", want: want} }

func (s step) String() string {
	if s.status != "" {
		return fmt.Sprintf("%s on %d", s.status, s.ch)
	}
	return fmt.Sprintf("W%v on %d", s.wm, s.ch)
}

// runSteps feeds steps through watermark and status functions and checks
// every answer.
func runSteps(t *testing.T, steps []step, onWatermark func(int, Watermark) Emission, onStatus func(int, Status) Emission) {
	t.Helper()
	for i, s := range steps {
		var e Emission
		switch s.status {
		case "IDLE":
			e = onStatus(s.ch, Idle)
		case "ACTIVE":
			e = onStatus(s.ch, Active)
		default:
			e = onWatermark(s.ch, s.wm)
		}
		if got := events(e); !slices.Equal(got, s.want) {
			t.Fatalf("step %d (%v): sent %v, want %v", i, s, got, s.want)
		}
	}
}
