package watermark

import (
	"slices"
	"testing"
)

// The combiner's own cases are in testdata/combiner.

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
