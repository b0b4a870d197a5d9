package window

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func mustTumble(t *testing.T, size, offset int64) Tumble {
	t.Helper()
	a, err := NewTumble(size, offset)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func mustHop(t *testing.T, size, slide, offset int64) Hop {
	t.Helper()
	a, err := NewHop(size, slide, offset)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func mustCumulate(t *testing.T, step, maxSize, offset int64) Cumulate {
	t.Helper()
	a, err := NewCumulate(step, maxSize, offset)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

const hour = 3_600_000

// The vectors of Flink's Tumbling/Hopping/CumulativeSliceAssignerTest
// testSliceAssignment(WithOffset), in UTC (time-zone shifting is the
// caller's).
func TestSliceEndFlinkVectors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		slicer Slicer
		ts     string
		want   string
	}{
		{"tumble 5h", mustTumble(t, 5*hour, 0), "1970-01-01T00:00:00", "1970-01-01T05:00:00"},
		{"tumble 5h", mustTumble(t, 5*hour, 0), "1970-01-01T04:59:59.999", "1970-01-01T05:00:00"},
		{"tumble 5h", mustTumble(t, 5*hour, 0), "1970-01-01T05:00:00", "1970-01-01T10:00:00"},
		{"tumble 5h +100ms", mustTumble(t, 5*hour, 100), "1970-01-01T00:00:00.1", "1970-01-01T05:00:00.1"},
		{"tumble 5h +100ms", mustTumble(t, 5*hour, 100), "1970-01-01T05:00:00.099", "1970-01-01T05:00:00.1"},
		{"tumble 5h +100ms", mustTumble(t, 5*hour, 100), "1970-01-01T05:00:00.1", "1970-01-01T10:00:00.1"},
		{"hop 5h/1h", mustHop(t, 5*hour, hour, 0), "1970-01-01T00:00:00", "1970-01-01T01:00:00"},
		{"hop 5h/1h", mustHop(t, 5*hour, hour, 0), "1970-01-01T04:59:59.999", "1970-01-01T05:00:00"},
		{"hop 5h/1h", mustHop(t, 5*hour, hour, 0), "1970-01-01T05:00:00", "1970-01-01T06:00:00"},
		{"hop 5h/1h +100ms", mustHop(t, 5*hour, hour, 100), "1970-01-01T00:00:00.1", "1970-01-01T01:00:00.1"},
		{"hop 5h/1h +100ms", mustHop(t, 5*hour, hour, 100), "1970-01-01T05:00:00.099", "1970-01-01T05:00:00.1"},
		{"hop 5h/1h +100ms", mustHop(t, 5*hour, hour, 100), "1970-01-01T05:00:00.1", "1970-01-01T06:00:00.1"},
		{"cumulate 1h/1d", mustCumulate(t, hour, 24*hour, 0), "1970-01-01T00:00:00", "1970-01-01T01:00:00"},
		{"cumulate 1h/1d", mustCumulate(t, hour, 24*hour, 0), "1970-01-02T22:59:59.999", "1970-01-02T23:00:00"},
		{"cumulate 1h/1d", mustCumulate(t, hour, 24*hour, 0), "1970-01-02T23:00:00", "1970-01-03T00:00:00"},
		{"cumulate 1h/5h +100ms", mustCumulate(t, hour, 5*hour, 100), "1970-01-01T00:00:00.100", "1970-01-01T01:00:00.100"},
		{"cumulate 1h/5h +100ms", mustCumulate(t, hour, 5*hour, 100), "1970-01-01T05:00:00.099", "1970-01-01T05:00:00.100"},
		{"cumulate 1h/5h +100ms", mustCumulate(t, hour, 5*hour, 100), "1970-01-01T05:00:00.1", "1970-01-01T06:00:00.100"},
	} {
		if got, want := tc.slicer.SliceEnd(utc(t, tc.ts)), utc(t, tc.want); got != want {
			t.Errorf("%s: slice of %s ends at %d, want %d (%s)", tc.name, tc.ts, got, want, tc.want)
		}
	}
}

// testGetWindowStart of the three slice assigner tests.
func TestSliceWindowStartFlinkVectors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		slicer Slicer
		pairs  [][2]string // window end, window start
	}{
		{"tumble 5h", mustTumble(t, 5*hour, 0), [][2]string{
			{"1970-01-01T00:00:00", "1969-12-31T19:00:00"}, {"1970-01-01T05:00:00", "1970-01-01T00:00:00"},
			{"1970-01-01T10:00:00", "1970-01-01T05:00:00"},
		}},
		{"hop 5h/1h", mustHop(t, 5*hour, hour, 0), [][2]string{
			{"1970-01-01T00:00:00", "1969-12-31T19:00:00"}, {"1970-01-01T01:00:00", "1969-12-31T20:00:00"},
			{"1970-01-01T02:00:00", "1969-12-31T21:00:00"}, {"1970-01-01T03:00:00", "1969-12-31T22:00:00"},
			{"1970-01-01T04:00:00", "1969-12-31T23:00:00"}, {"1970-01-01T05:00:00", "1970-01-01T00:00:00"},
			{"1970-01-01T06:00:00", "1970-01-01T01:00:00"}, {"1970-01-01T10:00:00", "1970-01-01T05:00:00"},
		}},
		{"cumulate 1h/5h", mustCumulate(t, hour, 5*hour, 0), [][2]string{
			{"1970-01-01T00:00:00", "1969-12-31T19:00:00"}, {"1970-01-01T01:00:00", "1970-01-01T00:00:00"},
			{"1970-01-01T02:00:00", "1970-01-01T00:00:00"}, {"1970-01-01T03:00:00", "1970-01-01T00:00:00"},
			{"1970-01-01T04:00:00", "1970-01-01T00:00:00"}, {"1970-01-01T05:00:00", "1970-01-01T00:00:00"},
			{"1970-01-01T06:00:00", "1970-01-01T05:00:00"}, {"1970-01-01T08:00:00", "1970-01-01T05:00:00"},
		}},
	} {
		for _, p := range tc.pairs {
			if got, want := tc.slicer.WindowStart(utc(t, p[0])), utc(t, p[1]); got != want {
				t.Errorf("%s: window ending %s starts at %d, want %s", tc.name, p[0], got, p[1])
			}
		}
	}
}

// testExpiredSlices of the three slice assigner tests.
func TestExpiredSlicesFlinkVectors(t *testing.T) {
	for _, tc := range []struct {
		name      string
		slicer    Slicer
		windowEnd string
		want      []string
	}{
		{"tumble 5h", mustTumble(t, 5*hour, 0), "1970-01-01T00:00:00", []string{"1970-01-01T00:00:00"}},
		{"tumble 5h", mustTumble(t, 5*hour, 0), "1970-01-01T05:00:00", []string{"1970-01-01T05:00:00"}},
		{"tumble 5h", mustTumble(t, 5*hour, 0), "1970-01-01T10:00:00", []string{"1970-01-01T10:00:00"}},
		{"hop 4h/1h", mustHop(t, 4*hour, hour, 0), "1970-01-01T00:00:00", []string{"1969-12-31T21:00:00"}},
		{"hop 4h/1h", mustHop(t, 4*hour, hour, 0), "1970-01-01T04:00:00", []string{"1970-01-01T01:00:00"}},
		{"hop 4h/1h", mustHop(t, 4*hour, hour, 0), "1970-01-01T08:00:00", []string{"1970-01-01T05:00:00"}},
		{"cumulate 1h/5h: first slice kept", mustCumulate(t, hour, 5*hour, 0), "1970-01-01T01:00:00", nil},
		{"cumulate 1h/5h", mustCumulate(t, hour, 5*hour, 0), "1970-01-01T02:00:00", []string{"1970-01-01T02:00:00"}},
		{"cumulate 1h/5h", mustCumulate(t, hour, 5*hour, 0), "1970-01-01T03:00:00", []string{"1970-01-01T03:00:00"}},
		{"cumulate 1h/5h", mustCumulate(t, hour, 5*hour, 0), "1970-01-01T04:00:00", []string{"1970-01-01T04:00:00"}},
		{"cumulate 1h/5h: last, with the first", mustCumulate(t, hour, 5*hour, 0), "1970-01-01T05:00:00",
			[]string{"1970-01-01T05:00:00", "1970-01-01T01:00:00"}},
		{"cumulate 1h/5h: first slice kept", mustCumulate(t, hour, 5*hour, 0), "1970-01-01T06:00:00", nil},
		{"cumulate 1h/5h", mustCumulate(t, hour, 5*hour, 0), "1970-01-01T10:00:00",
			[]string{"1970-01-01T10:00:00", "1970-01-01T06:00:00"}},
		{"cumulate 1h/5h", mustCumulate(t, hour, 5*hour, 0), "1970-01-01T00:00:00",
			[]string{"1970-01-01T00:00:00", "1969-12-31T20:00:00"}},
		// Not in Flink's tests: with step = size the one slice goes too.
		{"cumulate step = size", mustCumulate(t, hour, hour, 0), "1970-01-01T01:00:00", []string{"1970-01-01T01:00:00"}},
	} {
		var want []int64
		for _, s := range tc.want {
			want = append(want, utc(t, s))
		}
		if got := tc.slicer.ExpiredSlices(utc(t, tc.windowEnd), nil); !slices.Equal(got, want) {
			t.Errorf("%s: expired after %s = %v, want %v", tc.name, tc.windowEnd, got, want)
		}
	}
}

// testMerge of the hopping and cumulative slice assigner tests.
func TestMergeSlicesFlinkVectors(t *testing.T) {
	hop := mustHop(t, 5*hour, hour, 0)
	cum := mustCumulate(t, hour, 5*hour, 0)
	for _, tc := range []struct {
		name      string
		slicer    Slicer
		windowEnd string
		target    string // "" means none: a fresh accumulator
		slices    []string
	}{
		{"hop", hop, "1970-01-01T00:00:00", "", []string{"1970-01-01T00:00:00", "1969-12-31T23:00:00",
			"1969-12-31T22:00:00", "1969-12-31T21:00:00", "1969-12-31T20:00:00"}},
		{"hop", hop, "1970-01-01T05:00:00", "", []string{"1970-01-01T05:00:00", "1970-01-01T04:00:00",
			"1970-01-01T03:00:00", "1970-01-01T02:00:00", "1970-01-01T01:00:00"}},
		{"hop", hop, "1970-01-01T06:00:00", "", []string{"1970-01-01T06:00:00", "1970-01-01T05:00:00",
			"1970-01-01T04:00:00", "1970-01-01T03:00:00", "1970-01-01T02:00:00"}},
		{"cumulate first slice", cum, "1970-01-01T01:00:00", "1970-01-01T01:00:00", nil},
		{"cumulate", cum, "1970-01-01T02:00:00", "1970-01-01T01:00:00", []string{"1970-01-01T02:00:00"}},
		{"cumulate", cum, "1970-01-01T03:00:00", "1970-01-01T01:00:00", []string{"1970-01-01T03:00:00"}},
		{"cumulate", cum, "1970-01-01T04:00:00", "1970-01-01T01:00:00", []string{"1970-01-01T04:00:00"}},
		{"cumulate", cum, "1970-01-01T05:00:00", "1970-01-01T01:00:00", []string{"1970-01-01T05:00:00"}},
		{"cumulate first slice", cum, "1970-01-01T06:00:00", "1970-01-01T06:00:00", nil},
		{"cumulate", cum, "1970-01-01T08:00:00", "1970-01-01T06:00:00", []string{"1970-01-01T08:00:00"}},
		{"cumulate", cum, "1970-01-01T10:00:00", "1970-01-01T06:00:00", []string{"1970-01-01T10:00:00"}},
		{"cumulate", cum, "1970-01-01T00:00:00", "1969-12-31T20:00:00", []string{"1970-01-01T00:00:00"}},
		{"tumble", mustTumble(t, 5*hour, 0), "1970-01-01T05:00:00", "", []string{"1970-01-01T05:00:00"}},
	} {
		target, hasTarget, got := tc.slicer.MergeSlices(utc(t, tc.windowEnd), nil)
		var want []int64
		for _, s := range tc.slices {
			want = append(want, utc(t, s))
		}
		if hasTarget != (tc.target != "") || (hasTarget && target != utc(t, tc.target)) || !slices.Equal(got, want) {
			t.Errorf("%s: merge for %s = target %d (%v), slices %v; want target %q, slices %v",
				tc.name, tc.windowEnd, target, hasTarget, got, tc.target, want)
		}
	}
}

// testNextTriggerWindow of the hopping and cumulative slice assigner tests.
func TestNextWindowEndFlinkVectors(t *testing.T) {
	hop := mustHop(t, 5*hour, hour, 0)
	cum := mustCumulate(t, hour, 5*hour, 0)
	for _, tc := range []struct {
		name      string
		slicer    Slicer
		windowEnd string
		empty     bool
		want      string // "" means none
	}{
		{"hop", hop, "1970-01-01T00:00:00", false, "1970-01-01T01:00:00"},
		{"hop", hop, "1970-01-01T04:00:00", false, "1970-01-01T05:00:00"},
		{"hop", hop, "1970-01-01T06:00:00", false, "1970-01-01T07:00:00"},
		{"hop empty", hop, "1970-01-01T00:00:00", true, ""},
		{"hop empty", hop, "1970-01-01T06:00:00", true, ""},
		{"cumulate", cum, "1970-01-01T00:00:00", false, ""},
		{"cumulate", cum, "1970-01-01T01:00:00", false, "1970-01-01T02:00:00"},
		{"cumulate", cum, "1970-01-01T04:00:00", false, "1970-01-01T05:00:00"},
		{"cumulate", cum, "1970-01-01T05:00:00", false, ""},
		{"cumulate", cum, "1970-01-01T06:00:00", false, "1970-01-01T07:00:00"},
		{"cumulate empty", cum, "1970-01-01T00:00:00", true, ""},
		{"cumulate empty", cum, "1970-01-01T01:00:00", true, "1970-01-01T02:00:00"},
		{"cumulate empty", cum, "1970-01-01T05:00:00", true, ""},
		{"cumulate empty", cum, "1970-01-01T06:00:00", true, "1970-01-01T07:00:00"},
		{"tumble", mustTumble(t, hour, 0), "1970-01-01T01:00:00", false, ""},
	} {
		got, ok := tc.slicer.NextWindowEnd(utc(t, tc.windowEnd), tc.empty)
		if ok != (tc.want != "") || (ok && got != utc(t, tc.want)) {
			t.Errorf("%s: next after %s (empty %v) = %d, %v; want %q", tc.name, tc.windowEnd, tc.empty, got, ok, tc.want)
		}
	}
}

// FirstUnfiredWindowEnd and LateRowSlice: what a row of an already fired
// slice does (Flink's SlicingWindowProcessor).
func TestLateRowsInSlices(t *testing.T) {
	hop := mustHop(t, 5, 1, 0)      // a slice [0, 1) is in windows ending 1..5
	cum := mustCumulate(t, 1, 5, 0) // a slice [1, 2) is in windows ending 2..5
	for _, tc := range []struct {
		name         string
		slicer       Slicer
		sliceEnd, wm int64
		want         int64
		ok           bool
		lateSlice    int64
	}{
		{"hop on time", hop, 1, -1, 1, true, 1},
		{"hop first window fired", hop, 1, 0, 2, true, 1},
		{"hop three fired", hop, 1, 2, 4, true, 1},
		{"hop all but the last fired", hop, 1, 3, 5, true, 1},
		{"hop all fired", hop, 1, 4, 0, false, 1},
		{"cumulate on time", cum, 2, 0, 2, true, 1},
		{"cumulate its first window fired", cum, 2, 1, 3, true, 1},
		{"cumulate all fired", cum, 2, 4, 0, false, 1},
		{"tumble fired", mustTumble(t, 5, 0), 5, 4, 0, false, 5},
		{"far watermark", hop, 1, 1 << 62, 0, false, 1},
	} {
		got, ok := FirstUnfiredWindowEnd(tc.slicer, tc.sliceEnd, tc.wm)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: first unfired window of slice %d at watermark %d = %d, %v; want %d, %v",
				tc.name, tc.sliceEnd, tc.wm, got, ok, tc.want, tc.ok)
		}
		if got := tc.slicer.LateRowSlice(tc.sliceEnd); got != tc.lateSlice {
			t.Errorf("%s: late rows of slice %d go to %d, want %d", tc.name, tc.sliceEnd, got, tc.lateSlice)
		}
	}
}

// The slices agree with the plain assigners on random parameters and
// timestamps: the windows a row's slice is in are exactly AssignWindows',
// and each window's merged slices cover exactly that window.
func TestSlicesAgreeWithAssigners(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 3000; i++ {
		unit := 1 + rng.Int64N(50)
		k := 1 + rng.Int64N(8)
		ts := rng.Int64N(100_000) - 50_000
		var a Assigner
		var s Slicer
		switch i % 3 {
		case 0:
			h := mustHop(t, unit*k, unit, rng.Int64N(2*unit-1)-(unit-1))
			a, s = h, h
		case 1:
			c := mustCumulate(t, unit, unit*k, rng.Int64N(2*unit*k-1)-(unit*k-1))
			a, s = c, c
		default:
			tu := mustTumble(t, unit, rng.Int64N(2*unit-1)-(unit-1))
			a, s = tu, tu
		}
		want := a.AssignWindows(ts, nil)
		sliceEnd := s.SliceEnd(ts)
		if ts >= sliceEnd || ts < sliceEnd-s.SliceSize() {
			t.Fatalf("%+v: slice ending %d does not hold %d", s, sliceEnd, ts)
		}
		var got []Window
		for end := sliceEnd; end <= s.LastWindowEnd(sliceEnd); end += s.SliceSize() {
			got = append(got, Window{s.WindowStart(end), end})
		}
		slices.SortFunc(got, func(x, y Window) int { return compareInt64(x.Start*1_000_000+x.End, y.Start*1_000_000+y.End) })
		slices.SortFunc(want, func(x, y Window) int { return compareInt64(x.Start*1_000_000+x.End, y.Start*1_000_000+y.End) })
		if !slices.Equal(got, want) {
			t.Fatalf("%+v at %d: windows from slices %v, assigner %v", s, ts, got, want)
		}
		// Each window's slices (cumulate: its running total's slices, which
		// the earlier windows of the period merged) tile it exactly.
		for _, w := range want {
			if c, ok := s.(Cumulate); ok {
				covered := w.Start
				for end := c.WindowStart(w.End) + c.Step; end <= w.End; end += c.Step {
					covered = end
				}
				if covered != w.End {
					t.Fatalf("%+v: slices do not tile %v", s, w)
				}
				continue
			}
			_, _, parts := s.MergeSlices(w.End, nil)
			if len(parts) == 0 || parts[0] != w.End || parts[len(parts)-1]-s.SliceSize() != w.Start {
				t.Fatalf("%+v: slices %v do not tile %v", s, parts, w)
			}
		}
	}
}

func BenchmarkSliceEnd(b *testing.B) {
	for _, tc := range []struct {
		name string
		s    Slicer
	}{
		{"hop size/slide=2", Hop{Size: 10_000, Slide: 5_000}},
		{"hop size/slide=100", Hop{Size: 100_000, Slide: 1_000}},
		{"cumulate steps=24", Cumulate{Step: hour, MaxSize: 24 * hour}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var sink int64
			ts := int64(1_700_000_000_000)
			for b.Loop() {
				ts += 7
				sink += tc.s.SliceEnd(ts)
			}
			_ = sink
		})
	}
}

// The cost a row would have without slices: one entry per window.
func BenchmarkHopAssignWindows(b *testing.B) {
	for _, tc := range []struct {
		name string
		h    Hop
	}{
		{"size/slide=2", Hop{Size: 10_000, Slide: 5_000}},
		{"size/slide=100", Hop{Size: 100_000, Slide: 1_000}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			dst := make([]Window, 0, 100)
			ts := int64(1_700_000_000_000)
			for b.Loop() {
				ts += 7
				dst = tc.h.AssignWindows(ts, dst[:0])
			}
		})
	}
}
