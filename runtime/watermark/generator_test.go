package watermark

import (
	"slices"
	"testing"
	"time"
)

// The vectors of Flink's BoundedOutOfOrdernessWatermarksTest and
// AscendingTimestampsWatermarksTest.
func TestBoundedOutOfOrdernessFlinkVectors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		delay  int64
		events []int64
		want   Watermark
	}{
		{"bounded: before records", 10, nil, MinWatermark},
		{"bounded: after an event", 10, []int64{1337}, 1326},
		{"bounded: after non-monotonous events", 10, []int64{12345, 12300, 12340, 12280}, 12334},
		{"ascending: before records", 0, nil, MinWatermark},
		{"ascending: after an event", 0, []int64{1337}, 1336},
		{"ascending: after an event with a lower timestamp", 0, []int64{12345, 12340}, 12344},
		{"bounded: the lowest timestamps do not overflow", 10, []int64{-1 << 63}, MinWatermark},
		{"bounded: the greatest delay does not overflow", 1<<63 - 1, []int64{5}, 5 - (1<<63 - 1) - 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := NewBoundedOutOfOrderness(tc.delay)
			if err != nil {
				t.Fatal(err)
			}
			for _, ts := range tc.events {
				if e := g.OnEvent(ts); !e.IsZero() {
					t.Fatalf("OnEvent(%d) asked to send %+v", ts, e)
				}
			}
			if g.Current() != tc.want {
				t.Fatalf("watermark %v, want %v", g.Current(), tc.want)
			}
			// Sent only when above MinWatermark (Flink's output drops MIN).
			e := g.OnPeriodicEmit()
			if want := tc.want > MinWatermark; e.HasWatermark != want || (want && e.Watermark != tc.want) {
				t.Fatalf("OnPeriodicEmit = %+v, want watermark %v sent: %v", e, tc.want, want)
			}
		})
	}
}

// Flink's testRepeatedProbe: a second periodic emit without new rows gives
// the same watermark; here it is not sent again, only when it advances.
func TestBoundedOutOfOrdernessEmitsOnlyWhenAdvanced(t *testing.T) {
	g, _ := NewBoundedOutOfOrderness(10)
	g.OnEvent(723456)
	if got := events(g.OnPeriodicEmit()); !slices.Equal(got, []string{"W723445"}) {
		t.Fatalf("first emit %v", got)
	}
	if got := events(g.OnPeriodicEmit()); got != nil {
		t.Fatalf("repeated probe sent %v", got)
	}
	if g.Current() != 723445 {
		t.Fatalf("current %v", g.Current())
	}
	g.OnEvent(723400) // late row: no progress
	if got := events(g.OnPeriodicEmit()); got != nil {
		t.Fatalf("late row sent %v", got)
	}
	g.OnEvent(723500)
	if got := events(g.OnPeriodicEmit()); !slices.Equal(got, []string{"W723489"}) {
		t.Fatalf("after progress %v", got)
	}
}

func TestBoundedOutOfOrdernessRefusesNegativeDelay(t *testing.T) {
	if _, err := NewBoundedOutOfOrderness(-1); err == nil {
		t.Fatal("a negative delay was accepted")
	}
	if g := NewMonotonous(); g.delay != 0 {
		t.Fatalf("monotonous delay %d", g.delay)
	}
}

// Flink's WatermarksWithIdlenessTest: invalid timeouts, and the idleness
// timer's transitions.
func TestWithIdlenessRefusesNonPositiveTimeout(t *testing.T) {
	for _, timeout := range []time.Duration{0, -time.Millisecond} {
		if _, err := NewWithIdleness(NewMonotonous(), timeout, NewManualClock(time.Unix(0, 0))); err == nil {
			t.Errorf("timeout %v accepted", timeout)
		}
	}
}

func TestIdlenessTimerFlinkVectors(t *testing.T) {
	ms := time.Millisecond
	// An action advances the clock, records a row, or checks (a periodic
	// emit) expecting idle or not.
	type action struct {
		advance  time.Duration
		row      bool
		check    bool
		wantIdle bool
	}
	adv := func(d time.Duration) action { return action{advance: d} }
	row := action{row: true}
	check := func(wantIdle bool) action { return action{check: true, wantIdle: wantIdle} }
	makeIdle := func(timeout time.Duration) []action {
		return []action{check(false), adv(timeout + ms), check(true)}
	}
	for _, tc := range []struct {
		name    string
		timeout time.Duration
		actions []action
	}{
		{"initially active", 10 * ms, []action{check(false)}},
		{"idle without events", 10 * ms, []action{check(false), adv(11 * ms), check(true)}},
		{"repeated idle checks", 122 * ms, append(makeIdle(122*ms), check(true), adv(100*ms), check(true))},
		{"active after idleness", 10 * ms, append(makeIdle(10*ms), row, check(false))},
		{"idle, active, idle", 122 * ms, append(makeIdle(122*ms), row, check(false), check(false), adv(123*ms), check(true))},
		// WatermarksWithIdlenessTimeoutTest: the countdown starts at the first
		// quiet probe, and idleness needs strictly more than the timeout.
		{"countdown from the first quiet probe, strict", 10 * ms, []action{
			adv(4 * ms), row,
			adv(ms), check(false), // t=5: saw the row
			adv(5 * ms), check(false), // t=10: first quiet probe, countdown starts
			adv(5 * ms), check(false), // t=15: 5ms
			adv(5 * ms), check(false), // t=20: exactly 10ms, not more
			adv(5 * ms), check(true), // t=25: 15ms > 10ms
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := NewManualClock(time.Unix(1000, 0))
			g, err := NewWithIdleness(NewMonotonous(), tc.timeout, clock)
			if err != nil {
				t.Fatal(err)
			}
			for i, a := range tc.actions {
				switch {
				case a.advance != 0:
					clock.Advance(a.advance)
				case a.row:
					g.OnEvent(1)
				case a.check:
					if got := g.checkIfIdle(); got != a.wantIdle {
						t.Fatalf("action %d: idle %v, want %v", i, got, a.wantIdle)
					}
				}
			}
		})
	}
}

// The generator's output: Idle once after the timeout, nothing while idle,
// Active with the next row (before anything else), then watermarks again.
func TestWithIdlenessEmissions(t *testing.T) {
	clock := NewManualClock(time.Unix(1000, 0))
	inner, _ := NewBoundedOutOfOrderness(5)
	g, err := NewWithIdleness(inner, 100*time.Millisecond, clock)
	if err != nil {
		t.Fatal(err)
	}
	tick := func(want ...string) {
		t.Helper()
		clock.Advance(60 * time.Millisecond)
		if got := events(g.OnPeriodicEmit()); !slices.Equal(got, want) {
			t.Fatalf("periodic emit sent %v, want %v", got, want)
		}
	}
	if e := g.OnEvent(100); !e.IsZero() {
		t.Fatalf("first row sent %+v", e)
	}
	tick("W94")
	tick()       // quiet: countdown starts
	tick()       // 60ms
	tick("IDLE") // 120ms > 100ms
	tick()       // already idle
	if !g.Idle() {
		t.Fatal("not idle")
	}
	if got := events(g.OnEvent(90)); !slices.Equal(got, []string{"ACTIVE"}) {
		t.Fatalf("row after idleness sent %v, want [ACTIVE]", got)
	}
	tick() // a late row: the watermark did not advance
	g.OnEvent(200)
	tick("W194")
}
