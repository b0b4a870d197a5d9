package window

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
)

// TestDataDriven runs the golden files of testdata/: window assignment and
// validation (assign), slices (slices), firing, cleanup and lateness
// (lateness) and session merging (sessions). Each file says in its comments
// what its commands mean; `go test -run TestDataDriven -rewrite` rewrites
// the expected output after a deliberate change (review the diff).
func TestDataDriven(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			tf := timeFormat{utc: d.HasArg("utc")}
			switch d.Cmd {
			case "new":
				a, err := newAssigner(t, d)
				if err != nil {
					return "error: " + err.Error()
				}
				return fmt.Sprintf("%+v", a)
			case "assign":
				return runAssign(t, d, tf)
			case "start":
				return runStart(t, d, tf)
			case "windows":
				return runWindowPairs(t, d, tf)
			case "slices":
				return runSlices(t, d, tf)
			case "lateness":
				return runLateness(t, d, tf)
			case "sessions":
				return runSessions(t, d, tf)
			case "merge-windows":
				return runMergeWindows(t, d, tf)
			}
			t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
			return ""
		})
	})
}

// timeFormat prints times as milliseconds, or as UTC date-times when the
// command has the utc argument (the form of Flink's slice assigner tests).
type timeFormat struct{ utc bool }

func (f timeFormat) time(ms int64) string {
	const nearEnd = 1_000_000 // times this close to the int64 ends print as MIN+n or MAX-n
	switch {
	case ms == math.MaxInt64:
		return "MAX"
	case ms == math.MinInt64:
		return "MIN"
	case ms > math.MaxInt64-nearEnd:
		return fmt.Sprintf("MAX-%d", math.MaxInt64-ms)
	case ms < math.MinInt64+nearEnd:
		return fmt.Sprintf("MIN+%d", ms-math.MinInt64)
	case f.utc:
		return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.999")
	}
	return strconv.FormatInt(ms, 10)
}

func (f timeFormat) window(w Window) string {
	return "[" + f.time(w.Start) + ", " + f.time(w.End) + ")"
}

func (f timeFormat) windows(ws []Window) string {
	parts := make([]string, len(ws))
	for i, w := range ws {
		parts[i] = f.window(w)
	}
	return strings.Join(parts, " ")
}

func (f timeFormat) times(ts []int64) string {
	if len(ts) == 0 {
		return "none"
	}
	parts := make([]string, len(ts))
	for i, v := range ts {
		parts[i] = f.time(v)
	}
	return strings.Join(parts, " ")
}

// parseTime reads a time or a duration as milliseconds: an integer, MIN or
// MAX with an optional +n/-n, a UTC date-time (1970-01-01T05:00:00.1), or a
// Go duration (5h, 100ms).
func parseTime(t *testing.T, s string) int64 {
	t.Helper()
	for name, base := range map[string]int64{"MIN": math.MinInt64, "MAX": math.MaxInt64} {
		if rest, ok := strings.CutPrefix(s, name); ok {
			if rest == "" {
				return base
			}
			n, err := strconv.ParseInt(rest, 10, 64)
			if err != nil {
				t.Fatalf("bad time %q: %v", s, err)
			}
			return base + n
		}
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n
	}
	if strings.Contains(s, "T") {
		ts, err := time.Parse("2006-01-02T15:04:05.999999999", s)
		if err != nil {
			t.Fatalf("bad date-time %q: %v", s, err)
		}
		return ts.UnixMilli()
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatalf("bad time %q: an integer (ms), MIN/MAX±n, a UTC date-time or a duration: %v", s, err)
	}
	return d.Milliseconds()
}

// intArg reads argument key as a time (0 when absent).
func intArg(t *testing.T, d *datadriven.TestData, key string) int64 {
	t.Helper()
	arg, ok := d.Arg(key)
	if !ok {
		return 0
	}
	return parseTime(t, arg.SingleVal(t))
}

// newAssigner builds the assigner the command names by its first argument:
// tumble size= offset=, hop size= slide= offset=, cumulate step= size=
// offset=, session gap=.
func newAssigner(t *testing.T, d *datadriven.TestData) (Assigner, error) {
	t.Helper()
	if len(d.CmdArgs) == 0 {
		t.Fatalf("%s: %s needs the window kind first", d.Pos, d.Cmd)
	}
	size, offset := intArg(t, d, "size"), intArg(t, d, "offset")
	switch kind := d.CmdArgs[0].Key; kind {
	case "tumble":
		return NewTumble(size, offset)
	case "hop":
		return NewHop(size, intArg(t, d, "slide"), offset)
	case "cumulate":
		return NewCumulate(intArg(t, d, "step"), size, offset)
	case "session":
		return NewSession(intArg(t, d, "gap"))
	default:
		t.Fatalf("%s: unknown window kind %q", d.Pos, kind)
	}
	return nil, nil
}

func mustAssigner(t *testing.T, d *datadriven.TestData) Assigner {
	t.Helper()
	a, err := newAssigner(t, d)
	if err != nil {
		t.Fatalf("%s: %v", d.Pos, err)
	}
	return a
}

// lines splits the input into lines of fields, skipping blank lines.
func lines(d *datadriven.TestData) [][]string {
	var out [][]string
	for _, line := range strings.Split(d.Input, "\n") {
		if fields := strings.Fields(line); len(fields) > 0 {
			out = append(out, fields)
		}
	}
	return out
}

// assign <kind> <params>: each input line is a row's timestamp; the output
// is the windows it belongs to.
func runAssign(t *testing.T, d *datadriven.TestData, tf timeFormat) string {
	a := mustAssigner(t, d)
	var b strings.Builder
	for _, f := range lines(d) {
		ts := parseTime(t, f[0])
		fmt.Fprintf(&b, "%s: %s\n", f[0], tf.windows(a.AssignWindows(ts, nil)))
	}
	return b.String()
}

// start size= offset=: each input line is a timestamp; the output is the
// start of the window holding it.
func runStart(t *testing.T, d *datadriven.TestData, tf timeFormat) string {
	size, offset := intArg(t, d, "size"), intArg(t, d, "offset")
	var b strings.Builder
	for _, f := range lines(d) {
		fmt.Fprintf(&b, "%s: %s\n", f[0], tf.time(Start(parseTime(t, f[0]), offset, size)))
	}
	return b.String()
}

// windows: each input line is two windows (start end start end); the output
// says whether they intersect (or touch) and the window covering both.
func runWindowPairs(t *testing.T, d *datadriven.TestData, tf timeFormat) string {
	var b strings.Builder
	for _, f := range lines(d) {
		if len(f) != 4 {
			t.Fatalf("%s: want start end start end, got %v", d.Pos, f)
		}
		x := Window{parseTime(t, f[0]), parseTime(t, f[1])}
		y := Window{parseTime(t, f[2]), parseTime(t, f[3])}
		rel := "apart"
		if x.Intersects(y) {
			rel = "intersect"
		}
		fmt.Fprintf(&b, "%s %s: %s, cover %s, max timestamps %s %s\n", tf.window(x), tf.window(y), rel,
			tf.window(x.Cover(y)), tf.time(x.MaxTimestamp()), tf.time(y.MaxTimestamp()))
	}
	return b.String()
}

// slices <kind> <params>: each input line asks the slicer one question.
func runSlices(t *testing.T, d *datadriven.TestData, tf timeFormat) string {
	s, ok := mustAssigner(t, d).(Slicer)
	if !ok {
		t.Fatalf("%s: %s windows have no slices", d.Pos, d.CmdArgs[0].Key)
	}
	var b strings.Builder
	for _, f := range lines(d) {
		arg := func(i int) int64 {
			if i >= len(f) {
				t.Fatalf("%s: %q needs %d arguments", d.Pos, f[0], i)
			}
			return parseTime(t, f[i])
		}
		fmt.Fprintf(&b, "%s → ", strings.Join(f, " "))
		switch f[0] {
		case "slice-end": // slice-end <ts>
			b.WriteString(tf.time(s.SliceEnd(arg(1))))
		case "window-start": // window-start <window end>
			b.WriteString(tf.time(s.WindowStart(arg(1))))
		case "last-window-end": // last-window-end <slice end>
			b.WriteString(tf.time(s.LastWindowEnd(arg(1))))
		case "merge": // merge <window end>
			target, hasTarget, parts := s.MergeSlices(arg(1), nil)
			into := "a fresh accumulator"
			if hasTarget {
				into = tf.time(target)
			}
			fmt.Fprintf(&b, "slices %s into %s", tf.times(parts), into)
		case "expired": // expired <window end>
			b.WriteString(tf.times(s.ExpiredSlices(arg(1), nil)))
		case "next", "next-after-empty": // next <window end>
			if end, ok := s.NextWindowEnd(arg(1), f[0] == "next-after-empty"); ok {
				b.WriteString(tf.time(end))
			} else {
				b.WriteString("none")
			}
		case "late-row": // late-row <slice end> <watermark>
			end, ok := FirstUnfiredWindowEnd(s, arg(1), arg(2))
			if ok {
				fmt.Fprintf(&b, "into slice %s, first unfired window ends %s", tf.time(s.LateRowSlice(arg(1))), tf.time(end))
			} else {
				b.WriteString("dropped: every window fired")
			}
		default:
			t.Fatalf("%s: unknown slices question %q", d.Pos, f[0])
		}
		b.WriteString("\n")
	}
	return b.String()
}

// lateness allowed=<ms>: each input line is "window <end> <watermark>" or
// "row <ts> <watermark>".
func runLateness(t *testing.T, d *datadriven.TestData, tf timeFormat) string {
	allowed := intArg(t, d, "allowed")
	var b strings.Builder
	for _, f := range lines(d) {
		if len(f) != 3 {
			t.Fatalf("%s: want window|row <time> <watermark>, got %v", d.Pos, f)
		}
		at, wm := parseTime(t, f[1]), parseTime(t, f[2])
		switch f[0] {
		case "window":
			state := "open"
			if Fired(at, wm) {
				state = "fired"
			}
			late := "kept"
			if WindowLate(at, allowed, wm) {
				late = "late (state dropped, rows for it dropped)"
			}
			fmt.Fprintf(&b, "window ending %s at watermark %s: %s, cleanup at %s, %s\n",
				tf.time(at), tf.time(wm), state, tf.time(CleanupTime(at, allowed)), late)
		case "row":
			late := "on time"
			if RowLate(at, allowed, wm) {
				late = "late"
			}
			fmt.Fprintf(&b, "row at %s at watermark %s: %s\n", tf.time(at), tf.time(wm), late)
		default:
			t.Fatalf("%s: unknown lateness question %q", d.Pos, f[0])
		}
	}
	return b.String()
}

// sessions: a MergingSet driven by input lines "add <start> <end>",
// "retire <start> <end>" and "restore <start> <end> <state start> <state
// end> ..." (a new set from mappings); the output is each answer and the
// windows in flight at the end.
func runSessions(t *testing.T, d *datadriven.TestData, tf timeFormat) string {
	s, _ := NewMergingSet(nil)
	var b strings.Builder
	for _, f := range lines(d) {
		nums := make([]int64, len(f)-1)
		for i := range nums {
			nums[i] = parseTime(t, f[i+1])
		}
		switch f[0] {
		case "add":
			added := Window{nums[0], nums[1]}
			result, merge, merged := s.Add(added)
			fmt.Fprintf(&b, "add %s → %s", tf.window(added), tf.window(result))
			if merged {
				fmt.Fprintf(&b, "; merged %s, state in %s", tf.windows(merge.Merged), tf.window(merge.StateWindow))
				if len(merge.MergedStateWindows) > 0 {
					fmt.Fprintf(&b, " (merge in %s)", tf.windows(merge.MergedStateWindows))
				}
			}
			b.WriteString("\n")
		case "retire":
			retired := Window{nums[0], nums[1]}
			if err := s.Retire(retired); err != nil {
				fmt.Fprintf(&b, "retire %s: error: %v\n", tf.window(retired), err)
			} else {
				fmt.Fprintf(&b, "retire %s\n", tf.window(retired))
			}
		case "restore":
			var mappings []Mapping
			for i := 0; i+3 < len(nums); i += 4 {
				mappings = append(mappings, Mapping{Window{nums[i], nums[i+1]}, Window{nums[i+2], nums[i+3]}})
			}
			restored, err := NewMergingSet(mappings)
			if err != nil {
				fmt.Fprintf(&b, "restore: error: %v\n", err)
				continue
			}
			s = restored
			b.WriteString("restore\n")
		default:
			t.Fatalf("%s: unknown sessions step %q", d.Pos, f[0])
		}
	}
	b.WriteString("in flight:")
	for _, m := range s.Mappings() {
		if state, ok := s.StateWindow(m.Window); !ok || state != m.StateWindow {
			t.Fatalf("%s: StateWindow(%v) = %v, %v; Mappings says %v", d.Pos, m.Window, state, ok, m.StateWindow)
		}
		fmt.Fprintf(&b, " %s state %s;", tf.window(m.Window), tf.window(m.StateWindow))
	}
	if s.Len() == 0 {
		b.WriteString(" none")
	}
	return strings.TrimSuffix(b.String(), ";") + "\n"
}

// merge-windows: each input line is a window; the output is MergeWindows'
// groups.
func runMergeWindows(t *testing.T, d *datadriven.TestData, tf timeFormat) string {
	var ws []Window
	for _, f := range lines(d) {
		ws = append(ws, Window{parseTime(t, f[0]), parseTime(t, f[1])})
	}
	var b strings.Builder
	for _, g := range MergeWindows(ws) {
		fmt.Fprintf(&b, "%s ← %s\n", tf.window(g.Result), tf.windows(g.Members))
	}
	if b.Len() == 0 {
		return "no groups\n"
	}
	return b.String()
}
