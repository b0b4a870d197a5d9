package watermark

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
)

// TestDataDriven runs the golden files of testdata/: the input-channel valve
// (valve), the two-input combiner (combiner) and the generators (generators).
// Each file says in its comments what its commands mean; `go test -run
// TestDataDriven -rewrite` rewrites the expected output after a deliberate
// change (review the diff).
func TestDataDriven(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "valve":
				var n int
				d.ScanArgs(t, "channels", &n)
				v := NewValve(n)
				return runInputs(t, d, inputs{
					watermark: v.InputWatermark, status: v.InputStatus, emission: v.Input,
					describe: func(f []string) string {
						if f[0] == "channel" {
							c := v.Channel(atoi(t, f[1]))
							return fmt.Sprintf("%v %v aligned=%v", c.Watermark, c.Status, c.Aligned)
						}
						return fmt.Sprintf("%v %v", v.Watermark(), v.Status())
					},
				})
			case "combiner":
				var n int
				d.ScanArgs(t, "inputs", &n)
				c := NewInputCombiner(n)
				return runInputs(t, d, inputs{
					watermark: c.InputWatermark, status: c.InputStatus, emission: c.Input,
					describe: func([]string) string {
						status := Active
						if c.Idle() {
							status = Idle
						}
						return fmt.Sprintf("%v %v", c.Watermark(), status)
					},
				})
			case "bounded", "idleness":
				return runGenerator(t, d)
			}
			t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
			return ""
		})
	})
}

// inputs are the entry points of a valve or a combiner.
type inputs struct {
	watermark func(int, Watermark) Emission
	status    func(int, Status) Emission
	emission  func(int, Emission) Emission
	// describe answers "channel <n>" or "state".
	describe func(fields []string) string
}

// runInputs feeds the input lines, one per line, and prints what each sends
// on (W<ms>, ACTIVE, IDLE, or nothing):
//
//	wm <ch> <ms>              a watermark on channel (or input) ch
//	idle <ch>, active <ch>    a status change
//	send <ch> [active] [wm=<ms>] [idle]   one emission of an upstream
//	channel <ch>, state       the channel's or the whole's state
func runInputs(t *testing.T, d *datadriven.TestData, in inputs) string {
	var b strings.Builder
	for _, line := range strings.Split(d.Input, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		var e Emission
		switch f[0] {
		case "wm":
			e = in.watermark(atoi(t, f[1]), parseWatermark(t, f[2]))
		case "idle":
			e = in.status(atoi(t, f[1]), Idle)
		case "active":
			e = in.status(atoi(t, f[1]), Active)
		case "send":
			e = in.emission(atoi(t, f[1]), parseEmission(t, f[2:]))
		case "channel", "state":
			fmt.Fprintf(&b, "%s: %s\n", line, in.describe(f))
			continue
		default:
			t.Fatalf("%s: unknown input %q", d.Pos, f[0])
		}
		fmt.Fprintf(&b, "%s → %s\n", strings.Join(f, " "), sent(e))
	}
	return b.String()
}

// runGenerator drives a generator: "bounded delay=<ms>" (bounded
// out-of-orderness) or "idleness timeout=<duration> [delay=<ms>]" (a bounded
// generator with an idle timeout on a manual clock), with input lines:
//
//	event <ts>          a row (prints what it sends, usually nothing)
//	emit                a periodic emit (prints what it sends)
//	current             the bounded generator's watermark
//	advance <duration>  the manual clock moves on
func runGenerator(t *testing.T, d *datadriven.TestData) string {
	var delay int64
	d.MaybeScanArgs(t, "delay", &delay)
	bounded, err := NewBoundedOutOfOrderness(delay)
	if err != nil {
		return "error: " + err.Error() + "\n"
	}
	var g Generator = bounded
	var clock *ManualClock
	var idleness *WithIdleness
	if d.Cmd == "idleness" {
		var timeout string
		d.ScanArgs(t, "timeout", &timeout)
		clock = NewManualClock(time.Unix(1000, 0))
		if idleness, err = NewWithIdleness(bounded, parseDuration(t, timeout), clock); err != nil {
			return "error: " + err.Error() + "\n"
		}
		g = idleness
	}
	var b strings.Builder
	for _, line := range strings.Split(d.Input, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "event":
			ts, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				t.Fatalf("%s: bad timestamp %q", d.Pos, f[1])
			}
			fmt.Fprintf(&b, "%s → %s\n", line, sent(g.OnEvent(ts)))
		case "emit":
			fmt.Fprintf(&b, "emit → %s", sent(g.OnPeriodicEmit()))
			if idleness != nil {
				fmt.Fprintf(&b, " (idle %v)", idleness.Idle())
			}
			b.WriteString("\n")
		case "current":
			fmt.Fprintf(&b, "current: %v\n", bounded.Current())
		case "advance":
			if clock == nil {
				t.Fatalf("%s: only idleness has a clock", d.Pos)
			}
			clock.Advance(parseDuration(t, f[1]))
		default:
			t.Fatalf("%s: unknown generator input %q", d.Pos, f[0])
		}
	}
	return b.String()
}

// sent prints what an emission sends, in order.
func sent(e Emission) string {
	if got := events(e); len(got) > 0 {
		return strings.Join(got, " ")
	}
	return "nothing"
}

// parseEmission reads "[active] [wm=<ms>] [idle]".
func parseEmission(t *testing.T, fields []string) Emission {
	t.Helper()
	var e Emission
	for _, f := range fields {
		switch {
		case f == "active":
			e.BecameActive = true
		case f == "idle":
			e.BecameIdle = true
		case strings.HasPrefix(f, "wm="):
			e.HasWatermark, e.Watermark = true, parseWatermark(t, strings.TrimPrefix(f, "wm="))
		default:
			t.Fatalf("bad emission part %q: want active, wm=<ms> or idle", f)
		}
	}
	return e
}

// parseWatermark reads ms, MIN or MAX.
func parseWatermark(t *testing.T, s string) Watermark {
	t.Helper()
	switch s {
	case "MIN":
		return MinWatermark
	case "MAX":
		return math.MaxInt64
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("bad watermark %q: %v", s, err)
	}
	return Watermark(n)
}

func parseDuration(t *testing.T, s string) time.Duration {
	t.Helper()
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatalf("bad duration %q: %v", s, err)
	}
	return d
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("bad number %q: %v", s, err)
	}
	return n
}
