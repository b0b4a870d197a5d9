package watermark

import (
	"math/rand/v2"
	"testing"
)

// The cases of Flink's StatusWatermarkValveTest are in testdata/valve.

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
