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

// Flink's catch-up term: a backlog of 6000 records to read off in the
// default 5 min needs 20 records/s on top of the target rate. At 2
// subtasks taking 10 records/s of the 20 they could (utilization 0.5,
// within the band), the capacity needed at full utilization is 10 + 20 =
// 30 > 20: scale up to ceil(2 * (20 + 10/0.7) / 20) = 4.
func TestDecideScalesUpToReadABacklogOff(t *testing.T) {
	w := window(2, 10)
	d, _ := Decide(w, DefaultParams())
	if d.To != 2 || d.CatchUpRate != 0 {
		t.Fatalf("without a backlog: want 2 within the band, got %+v", d)
	}
	w.Backlog = 6000
	d, err := Decide(w, DefaultParams())
	if err != nil {
		t.Fatal(err)
	}
	if d.To != 4 || d.Backlog != 6000 || d.CatchUpRate != 20 || d.TrueRate != 20 ||
		d.Reason != "scale up: utilization above target+boundary with the catch-up rate" {
		t.Fatalf("want 2 -> 4 for 20 records/s of catch-up, got %+v", d)
	}
	// A catch-up duration of 0 turns the term off, as in Flink.
	p := DefaultParams()
	p.CatchUpDuration = 0
	if d, _ := Decide(w, p); d.To != 2 || d.CatchUpRate != 0 || d.Backlog != 6000 {
		t.Fatalf("catch-up off: want 2, got %+v", d)
	}
}

// A backlog keeps the subtasks that read it off: 4 subtasks taking 5 of
// the 40 records/s they could would go down to 1, but with 20 records/s
// of catch-up they go down to ceil(4 * (20 + 5/0.7) / 40) = 3 only.
func TestDecideScaleDownKeepsCapacityForTheBacklog(t *testing.T) {
	w := window(4, 5)
	d, _ := Decide(w, DefaultParams())
	if d.To != 1 {
		t.Fatalf("without a backlog: want 1, got %+v", d)
	}
	w.Backlog = 6000
	d, _ = Decide(w, DefaultParams())
	if d.To != 3 || d.CatchUpRate != 20 || d.Reason != "scale down: utilization below target-boundary with the catch-up rate" {
		t.Fatalf("want 4 -> 3, got %+v", d)
	}
	// A backlog the vertex needs all its subtasks for: 60 records/s of
	// catch-up need 60 + 5/0.4 above the 40 it can take; it scales up to
	// its max.
	w.Backlog = 18000
	d, _ = Decide(w, DefaultParams())
	if d.To != 4 || d.Reason != "at the max bound: utilization above target+boundary with the catch-up rate" {
		t.Fatalf("want 4 held at the max, got %+v", d)
	}
}

func TestDecideRefusesANegativeCatchUpDuration(t *testing.T) {
	p := DefaultParams()
	p.CatchUpDuration = -time.Second
	if _, err := Decide(window(1, 10), p); err == nil {
		t.Fatal("want an error for a negative catch-up duration")
	}
}
