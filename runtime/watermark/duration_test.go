package watermark

import "testing"

func TestParseMillis(t *testing.T) {
	for in, want := range map[string]int64{
		"10 s": 10_000, "500 ms": 500, "5 min": 300_000, "1 h": 3_600_000, "2 d": 172_800_000,
		"250": 250, "1 hour": 3_600_000, "2 days": 172_800_000, "30 seconds": 30_000,
		"-8 h": -28_800_000, " -100 ms ": -100, "1.5 s": 1500, "0.3 s": 300, "0.7 min": 42_000, "0.57 min": 34_200, "0": 0,
	} {
		if got, err := ParseMillis(in); err != nil || got != want {
			t.Errorf("ParseMillis(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "soon", "10 fortnights", "1 µs", "1.5 ms", "--1 s", "1e3 s"} {
		if got, err := ParseMillis(in); err == nil {
			t.Errorf("ParseMillis(%q) = %d, want an error", in, got)
		}
	}
}
