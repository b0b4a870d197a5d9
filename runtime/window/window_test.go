package window

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// utc reads a "1970-01-01T05:00:00.1" timestamp as UTC milliseconds, as the
// utcMills of Flink's SliceAssignerTestBase.
func utc(t *testing.T, s string) int64 {
	t.Helper()
	ts, err := time.Parse("2006-01-02T15:04:05.999999999", s)
	if err != nil {
		t.Fatal(err)
	}
	return ts.UnixMilli()
}

func TestStart(t *testing.T) {
	for _, tc := range []struct{ ts, offset, size, want int64 }{
		{0, 0, 5000, 0}, {4999, 0, 5000, 0}, {5000, 0, 5000, 5000},
		{100, 100, 5000, 100}, {5099, 100, 5000, 100}, {5100, 100, 5000, 5100},
		{0, -100, 5000, -100}, {4899, -100, 5000, -100}, {4900, -100, 5000, 4900},
		// Before the epoch: the window holding ts, never one after it.
		{-1, 0, 5000, -5000}, {-5000, 0, 5000, -5000}, {-5001, 0, 5000, -10000},
		{-7000, 0, 5000, -10000}, // ts - (ts - offset + size) % size would say -5000
		{-1, 100, 5000, -4900}, {math.MinInt64 + 3, 0, 2, math.MinInt64 + 2},
		{math.MaxInt64, 0, 1000, math.MaxInt64 - math.MaxInt64%1000},
	} {
		if got := Start(tc.ts, tc.offset, tc.size); got != tc.want {
			t.Errorf("Start(%d, %d, %d) = %d, want %d", tc.ts, tc.offset, tc.size, got, tc.want)
		}
	}
}

func TestIntersectsAndCover(t *testing.T) {
	for _, tc := range []struct {
		a, b  Window
		want  bool
		cover Window
	}{
		{Window{0, 10}, Window{5, 15}, true, Window{0, 15}},
		{Window{0, 10}, Window{10, 20}, true, Window{0, 20}}, // touching sessions merge
		{Window{10, 20}, Window{0, 10}, true, Window{0, 20}},
		{Window{0, 10}, Window{11, 20}, false, Window{0, 20}},
		{Window{0, 10}, Window{2, 3}, true, Window{0, 10}},
	} {
		if got := tc.a.Intersects(tc.b); got != tc.want {
			t.Errorf("%v.Intersects(%v) = %v", tc.a, tc.b, got)
		}
		if got := tc.a.Cover(tc.b); got != tc.cover {
			t.Errorf("%v.Cover(%v) = %v", tc.a, tc.b, got)
		}
	}
	if (Window{0, 10}).MaxTimestamp() != 9 {
		t.Error("MaxTimestamp is not End - 1")
	}
}

func TestFiringCleanupAndLateness(t *testing.T) {
	for _, tc := range []struct {
		end, lateness, watermark int64
		fired, windowLate        bool
		cleanup                  int64
	}{
		{end: 10, lateness: 0, watermark: 8, fired: false, windowLate: false, cleanup: 9},
		{end: 10, lateness: 0, watermark: 9, fired: true, windowLate: true, cleanup: 9},
		{end: 10, lateness: 5, watermark: 9, fired: true, windowLate: false, cleanup: 14},
		{end: 10, lateness: 5, watermark: 13, fired: true, windowLate: false, cleanup: 14},
		{end: 10, lateness: 5, watermark: 14, fired: true, windowLate: true, cleanup: 14},
		{end: math.MaxInt64 - 2, lateness: 10, watermark: math.MaxInt64 - 1, fired: true, windowLate: false, cleanup: math.MaxInt64},
		{end: 10, lateness: math.MaxInt64, watermark: math.MaxInt64, fired: true, windowLate: true, cleanup: math.MaxInt64},
	} {
		if got := Fired(tc.end, tc.watermark); got != tc.fired {
			t.Errorf("Fired(%d, %d) = %v", tc.end, tc.watermark, got)
		}
		if got := CleanupTime(tc.end, tc.lateness); got != tc.cleanup {
			t.Errorf("CleanupTime(%d, %d) = %d, want %d", tc.end, tc.lateness, got, tc.cleanup)
		}
		if got := WindowLate(tc.end, tc.lateness, tc.watermark); got != tc.windowLate {
			t.Errorf("WindowLate(%d, %d, %d) = %v", tc.end, tc.lateness, tc.watermark, got)
		}
	}
	for _, tc := range []struct {
		ts, lateness, watermark int64
		want                    bool
	}{
		{5, 0, 4, false}, {5, 0, 5, true}, {5, 3, 7, false}, {5, 3, 8, true},
		{math.MaxInt64 - 1, 5, math.MaxInt64 - 1, false}, {math.MaxInt64 - 1, 5, math.MaxInt64, true},
	} {
		if got := RowLate(tc.ts, tc.lateness, tc.watermark); got != tc.want {
			t.Errorf("RowLate(%d, %d, %d) = %v", tc.ts, tc.lateness, tc.watermark, got)
		}
	}
}

func windows(pairs ...int64) []Window {
	var ws []Window
	for i := 0; i < len(pairs); i += 2 {
		ws = append(ws, Window{pairs[i], pairs[i+1]})
	}
	return ws
}

// The vectors of Flink's TumblingEventTimeWindowsTest.
func TestTumbleFlinkVectors(t *testing.T) {
	for _, tc := range []struct {
		size, offset int64
		ts           []int64
		want         [][]Window
	}{
		{5000, 0, []int64{0, 4999, 5000}, [][]Window{windows(0, 5000), windows(0, 5000), windows(5000, 10000)}},
		{5000, 100, []int64{100, 5099, 5100}, [][]Window{windows(100, 5100), windows(100, 5100), windows(5100, 10100)}},
		{5000, -100, []int64{0, 4899, 4900}, [][]Window{windows(-100, 4900), windows(-100, 4900), windows(4900, 9900)}},
		{5000, 1000, []int64{1000, 5999, 6000}, [][]Window{windows(1000, 6000), windows(1000, 6000), windows(6000, 11000)}},
	} {
		a, err := NewTumble(tc.size, tc.offset)
		if err != nil {
			t.Fatal(err)
		}
		for i, ts := range tc.ts {
			if got := a.AssignWindows(ts, nil); !slices.Equal(got, tc.want[i]) {
				t.Errorf("tumble(%d, %d) at %d = %v, want %v", tc.size, tc.offset, ts, got, tc.want[i])
			}
		}
	}
}

// The vectors of Flink's SlidingEventTimeWindowsTest.
func TestHopFlinkVectors(t *testing.T) {
	for _, tc := range []struct {
		size, slide, offset int64
		ts                  int64
		want                []Window
	}{
		{5000, 1000, 0, 0, windows(-4000, 1000, -3000, 2000, -2000, 3000, -1000, 4000, 0, 5000)},
		{5000, 1000, 0, 4999, windows(0, 5000, 1000, 6000, 2000, 7000, 3000, 8000, 4000, 9000)},
		{5000, 1000, 0, 5000, windows(1000, 6000, 2000, 7000, 3000, 8000, 4000, 9000, 5000, 10000)},
		{5000, 1000, 100, 100, windows(-3900, 1100, -2900, 2100, -1900, 3100, -900, 4100, 100, 5100)},
		{5000, 1000, 100, 5099, windows(100, 5100, 1100, 6100, 2100, 7100, 3100, 8100, 4100, 9100)},
		{5000, 1000, 100, 5100, windows(1100, 6100, 2100, 7100, 3100, 8100, 4100, 9100, 5100, 10100)},
		{5000, 1000, -100, 0, windows(-4100, 900, -3100, 1900, -2100, 2900, -1100, 3900, -100, 4900)},
		{5000, 1000, -100, 4899, windows(-100, 4900, 900, 5900, 1900, 6900, 2900, 7900, 3900, 8900)},
		{5000, 1000, -100, 4900, windows(900, 5900, 1900, 6900, 2900, 7900, 3900, 8900, 4900, 9900)},
		{5000, 1000, 500, 100, windows(-4500, 500, -3500, 1500, -2500, 2500, -1500, 3500, -500, 4500)},
		{5000, 1000, 500, 5499, windows(500, 5500, 1500, 6500, 2500, 7500, 3500, 8500, 4500, 9500)},
		{5000, 1000, 500, 5100, windows(500, 5500, 1500, 6500, 2500, 7500, 3500, 8500, 4500, 9500)},
	} {
		a, err := NewHop(tc.size, tc.slide, tc.offset)
		if err != nil {
			t.Fatal(err)
		}
		if got := a.AssignWindows(tc.ts, nil); !slices.Equal(got, tc.want) {
			t.Errorf("hop(%d, %d, %d) at %d = %v, want %v", tc.size, tc.slide, tc.offset, tc.ts, got, tc.want)
		}
	}
}

func TestCumulateAndSessionAssignment(t *testing.T) {
	c, err := NewCumulate(1000, 3000, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		ts   int64
		want []Window
	}{
		{0, windows(0, 1000, 0, 2000, 0, 3000)},
		{999, windows(0, 1000, 0, 2000, 0, 3000)},
		{1000, windows(0, 2000, 0, 3000)},
		{2999, windows(0, 3000)},
		{3000, windows(3000, 4000, 3000, 5000, 3000, 6000)},
		{-1, windows(-3000, 0)},
	} {
		if got := c.AssignWindows(tc.ts, nil); !slices.Equal(got, tc.want) {
			t.Errorf("cumulate at %d = %v, want %v", tc.ts, got, tc.want)
		}
	}
	// EventTimeSessionWindowsTest's testWindowAssignment.
	s, err := NewSession(5000)
	if err != nil {
		t.Fatal(err)
	}
	for _, ts := range []int64{0, 4999, 5000} {
		if got := s.AssignWindows(ts, nil); !slices.Equal(got, windows(ts, ts+5000)) {
			t.Errorf("session at %d = %v", ts, got)
		}
	}
	if got := s.AssignWindows(math.MaxInt64-1, nil); !slices.Equal(got, windows(math.MaxInt64-1, math.MaxInt64)) {
		t.Errorf("session near the greatest time = %v", got)
	}
}

// Flink's testInvalidParameters of the DataStream assigners and of the
// slice assigners, with what the errors must say.
func TestValidation(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want string // in the message; "" means valid
	}{
		{"tumble negative size", second(NewTumble(-1000, 0)), "tumble size is -1000ms; it must be positive"},
		{"tumble zero size", second(NewTumble(0, 0)), "must be positive"},
		{"tumble offset above size", second(NewTumble(10000, 20000)), "abs(offset) < size"},
		{"tumble offset below -size", second(NewTumble(10000, -11000)), "abs(offset) < size"},
		{"tumble negative offset", second(NewTumble(10000, -1000)), ""},
		{"hop negative size", second(NewHop(-2000, 1000, 0)), "must both be positive"},
		{"hop negative slide", second(NewHop(2000, -1000, 0)), "must both be positive"},
		{"hop size not a multiple", second(NewHop(5000, 2000, 0)), "hop size 5000ms is not a multiple of the slide 2000ms"},
		{"hop size below slide", second(NewHop(500, 1000, 0)), "e.g. size 1000ms"},
		{"hop offset below -slide", second(NewHop(20000, 10000, -11000)), "abs(offset) < slide"},
		{"hop offset above slide", second(NewHop(20000, 10000, 11000)), "abs(offset) < slide"},
		{"hop negative offset", second(NewHop(10000, 5000, -1000)), ""},
		{"cumulate negative size", second(NewCumulate(1000, -5000, 0)), "must both be positive"},
		{"cumulate negative step", second(NewCumulate(-1000, 5000, 0)), "must both be positive"},
		{"cumulate size not a multiple", second(NewCumulate(2000, 5000, 0)), "cumulate size 5000ms is not a multiple of the step 2000ms"},
		{"cumulate offset", second(NewCumulate(1000, 5000, 5000)), "smaller than the size"},
		{"session zero gap", second(NewSession(0)), "session gap is 0ms"},
		{"session negative gap", second(NewSession(-1000)), "session gap is -1000ms; it must be positive"},
	} {
		switch {
		case tc.want == "" && tc.err != nil:
			t.Errorf("%s: %v", tc.name, tc.err)
		case tc.want != "" && (tc.err == nil || !strings.Contains(tc.err.Error(), tc.want)):
			t.Errorf("%s: error %v, want one containing %q", tc.name, tc.err, tc.want)
		}
	}
}

func second[T any](_ T, err error) error { return err }
