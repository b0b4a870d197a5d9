package state

import (
	"encoding/binary"
	"math"
	"testing"
)

// Benchmarks of the timer service on real Pebble, per timer:
//
//	go test -run '^$' -bench Timers -benchtime 200000x ./state/
//
// Timers are spread over 10,000 keys in 128 key groups, with the 8-byte
// namespace of a window end and timestamps increasing with the input, as a
// window operator registers them.
func BenchmarkTimers(b *testing.B) {
	const keys = 10_000
	// inputs returns n timers, built before the clock starts.
	inputs := func(n int) []Timer {
		out := make([]Timer, n)
		for i := range out {
			ts := int64(i/10) + int64(i*7919%50) + 999 // disorder within 50 ms
			out[i] = Timer{Timestamp: ts, Key: benchKey(i % keys), Namespace: binary.BigEndian.AppendUint64(nil, uint64(ts))}
		}
		return out
	}
	registerAll := func(b *testing.B, s *TimerService, ts []Timer) {
		for _, t := range ts {
			if err := s.RegisterEventTimeTimer(t.Key, t.Namespace, t.Timestamp); err != nil {
				b.Fatal(err)
			}
		}
	}
	newService := func(b *testing.B) *TimerService {
		be := openBackend(b, benchOptions(b, KeyGroupRange{Start: 0, End: 127}, 0))
		return newTimerService(b, be, "window-timers")
	}
	perTimer := func(b *testing.B) {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/timer")
	}
	nop := func(Timer) error { return nil }

	b.Run("register", func(b *testing.B) {
		s, in := newService(b), inputs(b.N)
		b.ResetTimer()
		registerAll(b, s, in)
		perTimer(b)
	})
	b.Run("register-again", func(b *testing.B) {
		// A window operator registers its window's timer for every row:
		// 10,000 timers, each registered again b.N/10,000 times.
		s, in := newService(b), inputs(keys)
		registerAll(b, s, in)
		b.ResetTimer()
		for i := range b.N {
			t := in[i%keys]
			if err := s.RegisterEventTimeTimer(t.Key, t.Namespace, t.Timestamp); err != nil {
				b.Fatal(err)
			}
		}
		perTimer(b)
	})
	b.Run("fire", func(b *testing.B) {
		s := newService(b)
		registerAll(b, s, inputs(b.N))
		b.ResetTimer()
		fired := 0
		count := func(Timer) error { fired++; return nil }
		for wm := int64(0); fired < b.N; wm += 100 { // the watermark in steps of 100 ms
			if err := s.AdvanceWatermark(wm, count); err != nil {
				b.Fatal(err)
			}
		}
		perTimer(b)
	})
	b.Run("register-and-fire", func(b *testing.B) {
		// As a window operator: a batch of 1,000 rows registers its
		// timers, then the watermark follows 50 ms behind.
		s, in := newService(b), inputs(b.N)
		b.ResetTimer()
		for i := 0; i < b.N; i += 1000 {
			registerAll(b, s, in[i:min(i+1000, b.N)])
			if err := s.AdvanceWatermark(in[i].Timestamp-50, nop); err != nil {
				b.Fatal(err)
			}
		}
		if err := s.AdvanceWatermark(math.MaxInt64, nop); err != nil {
			b.Fatal(err)
		}
		perTimer(b)
	})
	b.Run("advance-nothing-due", func(b *testing.B) {
		s := newService(b)
		registerAll(b, s, inputs(100_000))
		b.ResetTimer()
		for i := range b.N {
			if err := s.AdvanceWatermark(int64(i%900), nop); err != nil {
				b.Fatal(err)
			}
		}
	})
}
