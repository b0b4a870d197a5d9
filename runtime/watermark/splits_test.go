package watermark

import (
	"slices"
	"testing"
	"time"
)

func TestSplits(t *testing.T) {
	clock := NewManualClock(time.Unix(0, 0))
	s := NewSplits(func() (Generator, error) {
		inner, err := NewBoundedOutOfOrderness(100)
		if err != nil {
			return nil, err
		}
		return NewWithIdleness(inner, time.Second, clock)
	})
	expect := func(e Emission, err error, want ...string) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		if got := events(e); !slices.Equal(got, want) {
			t.Fatalf("sent %v, want %v", got, want)
		}
	}
	tick := func(want ...string) {
		t.Helper()
		clock.Advance(500 * time.Millisecond)
		expect(s.OnPeriodicEmit(), nil, want...)
	}
	for _, id := range []string{"a.csv", "b.csv"} {
		if err := s.Add(id); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Add("a.csv"); err == nil {
		t.Fatal("a split was added twice")
	}
	tick() // no rows: nothing
	e, err := s.OnEvent("a.csv", 10_000)
	expect(e, err)
	e, err = s.OnEvent("b.csv", 2_000)
	expect(e, err)
	tick("W1899") // min(9899, 1899)
	e, err = s.OnEvent("a.csv", 20_000)
	expect(e, err)
	tick()         // t=1.5s: b holds it at 1899; b's quiet countdown starts
	tick()         // t=2s: b quiet 0.5s; a's countdown starts
	tick()         // t=2.5s: b quiet 1s, not more than the timeout
	tick("W19899") // t=3s: b idle after 1.5s quiet: a alone counts
	tick("IDLE")   // t=3.5s: a idle too
	e, err = s.OnEvent("b.csv", 3_000)
	expect(e, err, "ACTIVE") // b is back: active at once, before its row
	tick()                   // b's 2899 is behind 19899: no watermark
	if !s.Remove("b.csv") || s.Remove("b.csv") || s.Len() != 1 {
		t.Fatal("Remove's answers are wrong")
	}
	if _, err := s.OnEvent("b.csv", 1); err == nil {
		t.Fatal("a row of a removed split was accepted")
	}
	// The output is still active (b's return made it so; removing a split
	// recomputes nothing, as Flink's), so a's return sends nothing.
	e, err = s.OnEvent("a.csv", 30_000)
	expect(e, err)
	tick("W29899")
	if s.Watermark() != 29899 || s.Idle() {
		t.Fatalf("splits at %v idle=%v", s.Watermark(), s.Idle())
	}
}

func TestSplitsGeneratorError(t *testing.T) {
	s := NewSplits(func() (Generator, error) { return NewBoundedOutOfOrderness(-5) })
	if err := s.Add("x"); err == nil {
		t.Fatal("a split with a bad generator was added")
	}
	if s.Len() != 0 {
		t.Fatal("the split was registered anyway")
	}
}
