package watermark

import (
	"math/rand/v2"
	"testing"
)

// The vectors of Flink's StatusWatermarkValveTest, one row per test.
func TestValveFlinkVectors(t *testing.T) {
	for _, tc := range []struct {
		name     string
		channels int
		steps    []step
	}{
		{"single input increasing watermarks", 1, []step{wm(0, 0, "W0"), wm(0, 25, "W25")}},
		{"single input decreasing watermarks yield nothing", 1, []step{wm(0, 25, "W25"), wm(0, 18), wm(0, 42, "W42")}},
		{"single input status toggling", 1, []step{
			active(0), // channels start active
			idle(0, "IDLE"), idle(0), active(0, "ACTIVE"),
		}},
		{"single input watermark intact during idleness", 1, []step{
			wm(0, 25, "W25"), idle(0, "IDLE"),
			wm(0, 50), // ignored while idle
			active(0, "ACTIVE"), wm(0, 50, "W50"),
		}},
		{"multiple inputs yield a watermark only once all channels have one", 3, []step{
			wm(0, 0), wm(1, 0), wm(2, 0, "W0"),
		}},
		{"multiple inputs increasing watermarks", 3, []step{
			wm(0, 0), wm(1, 0), wm(2, 0, "W0"),
			wm(0, 12), wm(2, 8), wm(2, 10),
			wm(1, 15, "W10"), // channel 2 holds the minimum at 10
			wm(2, 17, "W12"), // now channel 0 at 12
			wm(0, 20, "W15"), // now channel 1 at 15
		}},
		{"multiple inputs decreasing watermarks yield nothing", 3, []step{
			wm(0, 25), wm(1, 10), wm(2, 17, "W10"),
			wm(0, 12), wm(1, 8), wm(2, 15),
		}},
		{"multiple inputs status toggling", 2, []step{
			active(0), active(1),
			idle(1), idle(0, "IDLE"),
			idle(0), idle(1),
			active(1, "ACTIVE"), active(0),
		}},
		{"watermark advances from the remaining active channels", 3, []step{
			wm(0, 15), wm(1, 10),
			idle(2, "W10"),
			wm(1, 18, "W15"), wm(0, 20, "W18"),
		}},
		{"watermark advances as channels become idle one by one", 3, []step{
			wm(0, 25), wm(1, 10), wm(2, 17, "W10"),
			idle(1, "W17"), idle(2, "W25"),
		}},
		{"all idle flushes the greatest watermark, then IDLE", 3, []step{
			wm(0, 10), wm(1, 5), wm(2, 3, "W3"),
			idle(0), idle(1),
			idle(2, "W10", "IDLE"),
		}},
		{"a channel that resumes rejoins only once caught up", 3, []step{
			wm(0, 10), wm(1, 7), wm(2, 3, "W3"),
			idle(2, "W7"),
			active(2), // behind (3 < 7): not aligned
			wm(2, 5),  // accepted, still behind
			wm(2, 9),  // caught up: aligned again, 7 is still the minimum
			wm(1, 12, "W9"),
		}},
		{"nothing when every active channel is unaligned", 3, []step{
			wm(0, 10), wm(1, 7),
			idle(2, "W7"),
			active(2),
			idle(0), idle(1), // channel 2 is the only active one, and unaligned
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := NewValve(tc.channels)
			runSteps(t, tc.steps, v.InputWatermark, v.InputStatus)
		})
	}
}

func TestValveChannelState(t *testing.T) {
	v := NewValve(3)
	for _, s := range []step{wm(0, 10), wm(1, 7), wm(2, 3), idle(2), active(2), wm(2, 5)} {
		if s.status == "" {
			v.InputWatermark(s.ch, s.wm)
		} else if s.status == "IDLE" {
			v.InputStatus(s.ch, Idle)
		} else {
			v.InputStatus(s.ch, Active)
		}
	}
	if got := v.Channel(2); got != (ChannelState{Watermark: 5, Status: Active, Aligned: false}) {
		t.Fatalf("channel 2 = %+v, want watermark 5, active, not aligned", got)
	}
	v.InputWatermark(2, 9)
	if got := v.Channel(2); !got.Aligned || got.Watermark != 9 {
		t.Fatalf("channel 2 = %+v, want aligned at 9", got)
	}
	if v.Watermark() != 7 || v.Status() != Active {
		t.Fatalf("valve at %v %v, want 7 ACTIVE", v.Watermark(), v.Status())
	}
}

// The valve's output must equal the definition, recomputed naively, on a
// long random sequence: that exercises the heap on many channels.
func TestValveMatchesNaiveDefinition(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 17
	v := NewValve(n)
	naive := make([]naiveChannel, n)
	for i := range naive {
		naive[i] = naiveChannel{w: MinWatermark, aligned: true}
	}
	last, valveIdle := MinWatermark, false
	for i := 0; i < 20000; i++ {
		c := rng.IntN(n)
		var got Emission
		want := Emission{}
		if rng.IntN(10) == 0 {
			toIdle := !naive[c].idle
			if toIdle {
				got = v.InputStatus(c, Idle)
				naive[c].idle, naive[c].aligned = true, false
				anyActive := false
				for _, o := range naive {
					anyActive = anyActive || !o.idle
				}
				if !anyActive {
					if naive[c].w == last {
						max := MinWatermark
						for _, o := range naive {
							max = maxW(max, o.w)
						}
						if max > last {
							last, want = max, watermarkEmission(max)
						}
					}
					valveIdle, want.BecameIdle = true, true
				} else if naive[c].w == last {
					want = naiveAdvance(naive, &last)
				}
			} else {
				got = v.InputStatus(c, Active)
				naive[c].idle = false
				naive[c].aligned = naive[c].w >= last
				if valveIdle {
					valveIdle, want = false, Emission{BecameActive: true}
				}
			}
		} else {
			w := naive[c].w
			if w == MinWatermark {
				w = 0
			}
			w += Watermark(rng.IntN(20) - 5)
			got = v.InputWatermark(c, w)
			if !valveIdle && !naive[c].idle && w > naive[c].w {
				naive[c].w = w
				if !naive[c].aligned && w >= last {
					naive[c].aligned = true
				}
				want = naiveAdvance(naive, &last)
			}
		}
		if got != want {
			t.Fatalf("input %d on channel %d: got %+v, want %+v", i, c, got, want)
		}
	}
}

type naiveChannel struct {
	w       Watermark
	idle    bool
	aligned bool
}

func naiveAdvance(chs []naiveChannel, last *Watermark) Emission {
	min, any := MaxWatermark, false
	for _, o := range chs {
		if o.aligned {
			any, min = true, minW(min, o.w)
		}
	}
	if any && min > *last {
		*last = min
		return watermarkEmission(min)
	}
	return Emission{}
}

func minW(a, b Watermark) Watermark {
	if a < b {
		return a
	}
	return b
}

func maxW(a, b Watermark) Watermark {
	if a > b {
		return a
	}
	return b
}

func TestValveInputFeedsAnEmissionInOrder(t *testing.T) {
	v := NewValve(2)
	v.InputWatermark(0, 5)
	v.InputWatermark(1, 8)
	// Channel 0 sends its last watermark and goes idle in one emission: the
	// valve advances to 8 from channel 1.
	if got := events(v.Input(0, Emission{HasWatermark: true, Watermark: 6, BecameIdle: true})); len(got) != 1 || got[0] != "W8" {
		t.Fatalf("sent %v, want [W8]", got)
	}
	// Channel 1 goes idle too: the valve is idle.
	if got := events(v.Input(1, Emission{BecameIdle: true})); len(got) != 1 || got[0] != "IDLE" {
		t.Fatalf("sent %v, want [IDLE]", got)
	}
	// Channel 0 comes back with a watermark past 8: ACTIVE, then the watermark.
	got := events(v.Input(0, Emission{BecameActive: true, HasWatermark: true, Watermark: 9}))
	if len(got) != 2 || got[0] != "ACTIVE" || got[1] != "W9" {
		t.Fatalf("sent %v, want [ACTIVE W9]", got)
	}
}

func BenchmarkValve(b *testing.B) {
	for _, n := range []int{4, 64} {
		b.Run(map[int]string{4: "channels=4", 64: "channels=64"}[n], func(b *testing.B) {
			v := NewValve(n)
			w := Watermark(0)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				ch := i % n
				if ch == 0 {
					w += 10
				}
				v.InputWatermark(ch, w+Watermark(ch))
			}
		})
	}
}
