package autoscaler

import (
	"testing"
	"time"
)

// A subtask that takes 10 rows/s when fully busy: the ideal parallelism for a
// target rate R at 0.7 utilization is ceil(R / 7).
func window(p int, target float64) Window {
	perSubtask := 10.0
	in := min(target, perSubtask*float64(p))
	return Window{UID: "udf", Parallelism: p, Min: 1, Max: 4,
		RecordsInPerSec: in, BusyRatio: in / (perSubtask * float64(p)), TargetRate: target,
		SinceLastRescale: time.Hour}
}

func TestDecideScalesUpToIdealImmediately(t *testing.T) {
	w := window(1, 20)
	w.SinceLastRescale = 0
	d, err := Decide(w, DefaultParams())
	if err != nil {
		t.Fatal(err)
	}
	if d.To != 3 || d.TrueRate != 10 {
		t.Fatalf("want 1 -> 3 at true rate 10, got %+v", d)
	}
}

func TestDecideClampsToBounds(t *testing.T) {
	d, err := Decide(window(2, 200), DefaultParams())
	if err != nil {
		t.Fatal(err)
	}
	if d.To != 4 {
		t.Fatalf("want clamp to max 4, got %+v", d)
	}
}

func TestDecideScaleDownWaitsForInterval(t *testing.T) {
	w := window(4, 5)
	w.SinceLastRescale = time.Minute
	d, _ := Decide(w, DefaultParams())
	if d.To != 4 {
		t.Fatalf("scale-down inside the interval: want 4, got %+v", d)
	}
	w.SinceLastRescale = 2 * time.Hour
	d, _ = Decide(w, DefaultParams())
	if d.To != 1 {
		t.Fatalf("scale-down after the interval: want 1, got %+v", d)
	}
}

func TestDecideSteadyLoadDoesNotOscillate(t *testing.T) {
	p := 1
	for range 10 {
		d, err := Decide(window(p, 25), DefaultParams())
		if err != nil {
			t.Fatal(err)
		}
		p = d.To
	}
	for range 10 {
		d, _ := Decide(window(p, 25), DefaultParams())
		if d.To != p {
			t.Fatalf("steady load changed parallelism %d -> %d: %s", p, d.To, d.Reason)
		}
	}
	if p != 4 {
		t.Fatalf("want ideal 4 for 25 rows/s, got %d", p)
	}
}

func TestDecideRefusesBadBounds(t *testing.T) {
	w := window(1, 10)
	w.Min, w.Max = 3, 2
	if _, err := Decide(w, DefaultParams()); err == nil {
		t.Fatal("want an error for min > max")
	}
}

func TestDecideSaysWhenABoundHoldsIt(t *testing.T) {
	d, _ := Decide(window(4, 200), DefaultParams())
	if d.To != 4 || d.Reason != "at the max bound: utilization above target+boundary" {
		t.Fatalf("%+v", d)
	}
	d, _ = Decide(window(1, 1), DefaultParams())
	if d.To != 1 || d.Reason != "at the min bound: utilization below target-boundary" {
		t.Fatalf("%+v", d)
	}
}
