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
