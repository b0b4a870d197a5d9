package watermark

import (
	"slices"
	"testing"
)

// A two-input operator takes the minimum of both inputs, leaves an idle one
// out, and is idle when both are (Flink's AbstractStreamOperator with
// IndexedCombinedWatermarkStatus).
func TestInputCombiner(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"minimum of both inputs", []step{
			wm(0, 10), wm(1, 5, "W5"), wm(1, 12, "W10"), wm(0, 20, "W12"),
		}},
		{"never goes back", []step{wm(0, 10), wm(1, 10, "W10"), wm(0, 3), wm(1, 4)}},
		{"an idle input is left out", []step{
			wm(0, 10), idle(1, "W10"), wm(0, 15, "W15"),
		}},
		{"both idle: idle; one back: active first", []step{
			wm(0, 10), wm(1, 20, "W10"),
			idle(0, "W20"), idle(1, "IDLE"),
			active(0, "ACTIVE"), // its 10 is behind 20: no watermark
			wm(0, 25, "W25"),
		}},
		{"a watermark on an idle input makes it active", []step{
			idle(0), idle(1, "IDLE"), wm(1, 7, "ACTIVE", "W7"),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewInputCombiner(2)
			runSteps(t, tc.steps, c.InputWatermark, c.InputStatus)
		})
	}
}

// Valves in front of a combiner: what each valve sends is fed as it is.
func TestValvesIntoCombiner(t *testing.T) {
	left, right := NewValve(2), NewValve(1)
	c := NewInputCombiner(2)
	send := func(e Emission, want ...string) {
		t.Helper()
		if got := events(e); !slices.Equal(got, want) {
			t.Fatalf("sent %v, want %v", got, want)
		}
	}
	send(c.Input(0, left.InputWatermark(0, 10)))
	send(c.Input(0, left.InputWatermark(1, 8)))
	send(c.Input(1, right.InputWatermark(0, 9)), "W8")
	send(c.Input(0, left.InputStatus(1, Idle)), "W9")
	send(c.Input(1, right.InputStatus(0, Idle)), "W10")
	send(c.Input(0, left.InputStatus(0, Idle)), "IDLE")
	if !c.Idle() || c.Watermark() != 10 {
		t.Fatalf("combiner at %v idle=%v", c.Watermark(), c.Idle())
	}
}

func TestEmissionThen(t *testing.T) {
	for _, tc := range []struct {
		a, b Emission
		want []string
	}{
		{Emission{}, Emission{}, nil},
		{watermarkEmission(1), watermarkEmission(2), []string{"W2"}},
		{Emission{BecameActive: true}, watermarkEmission(2), []string{"ACTIVE", "W2"}},
		{watermarkEmission(1), Emission{BecameIdle: true}, []string{"W1", "IDLE"}},
		{Emission{BecameIdle: true}, Emission{BecameActive: true, HasWatermark: true, Watermark: 3}, []string{"W3"}},
		{Emission{BecameActive: true, BecameIdle: true}, Emission{BecameActive: true}, []string{"ACTIVE"}},
	} {
		if got := events(tc.a.then(tc.b)); !slices.Equal(got, tc.want) {
			t.Errorf("%+v then %+v sent %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}
