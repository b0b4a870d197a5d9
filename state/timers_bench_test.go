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
	timerAt := func(i int) (Key, []byte, int64) {
		ts := int64(i/10) + int64(i*7919%50) // disorder within 50 ms
		return benchKey(i % keys), binary.BigEndian.AppendUint64(nil, uint64(ts+999)), ts + 999
	}
	registerAll := func(b *testing.B, s *TimerService, n int) {
		for i := range n {
			k, ns, ts := timerAt(i)
			if err := s.RegisterEventTimeTimer(k, ns, ts); err != nil {
				b.Fatal(err)
			}
		}
	}
	newService := func(b *testing.B) *TimerService {
		be := openBackend(b, benchOptions(b, KeyGroupRange{0, 127}, 0))
		return newTimerService(b, be, "window-timers")
	}
	nop := func(Timer) error { return nil }

	b.Run("register", func(b *testing.B) {
		s := newService(b)
		b.ResetTimer()
		registerAll(b, s, b.N)
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/timer")
	})
	b.Run("fire", func(b *testing.B) {
		s := newService(b)
		registerAll(b, s, b.N)
		b.ResetTimer()
		fired := 0
		count := func(Timer) error { fired++; return nil }
		for wm := int64(0); fired < b.N; wm += 100 { // the watermark in steps of 100 ms
			if err := s.AdvanceWatermark(wm, count); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/timer")
	})
	b.Run("register-and-fire", func(b *testing.B) {
		// As a window operator: a batch of 1,000 rows registers its
		// timers, then the watermark follows 50 ms behind.
		s := newService(b)
		b.ResetTimer()
		for i := 0; i < b.N; i += 1000 {
			for j := i; j < min(i+1000, b.N); j++ {
				k, ns, ts := timerAt(j)
				if err := s.RegisterEventTimeTimer(k, ns, ts); err != nil {
					b.Fatal(err)
				}
			}
			_, _, ts := timerAt(i)
			if err := s.AdvanceWatermark(ts-50, nop); err != nil {
				b.Fatal(err)
			}
		}
		if err := s.AdvanceWatermark(math.MaxInt64, nop); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/timer")
	})
	b.Run("advance-nothing-due", func(b *testing.B) {
		s := newService(b)
		registerAll(b, s, 100_000)
		b.ResetTimer()
		for i := range b.N {
			if err := s.AdvanceWatermark(int64(i%900), nop); err != nil {
				b.Fatal(err)
			}
		}
	})
}
