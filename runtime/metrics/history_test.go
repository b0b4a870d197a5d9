package metrics

import (
	"testing"
	"time"
)

// A vertex's history keeps its newest points, oldest first, and never more
// than its capacity.
func TestHistoryKeepsTheNewestPoints(t *testing.T) {
	h := NewHistory(3)
	start := time.Unix(1000, 0)
	for i := range 5 {
		h.Add("v", VertexPoint{At: start.Add(time.Duration(i) * time.Second), RecordsInPerSecond: float64(i)})
	}
	h.Add("w", VertexPoint{At: start})
	got := h.Points("v")
	if len(got) != 3 {
		t.Fatalf("kept %d points, want the capacity 3: %+v", len(got), got)
	}
	for i, p := range got {
		if want := float64(i + 2); p.RecordsInPerSecond != want || !p.At.Equal(start.Add(time.Duration(i+2)*time.Second)) {
			t.Errorf("point %d: %+v, want the one added %vth", i, p, want)
		}
	}
	if w := h.Points("w"); len(w) != 1 {
		t.Errorf("another vertex's points: %+v", w)
	}
	if none := h.Points("unknown"); none != nil {
		t.Errorf("a vertex never sampled: %+v", none)
	}
}

// A vertex's point sums its subtasks' records, takes the largest busy,
// idle and back-pressured time and the lowest watermark, none while a
// subtask has none.
func TestVertexPointOf(t *testing.T) {
	at := time.Unix(2000, 0)
	rates := []Rates{
		{RecordsInPerSecond: 10, RecordsOutPerSecond: 5, BusyTimeMsPerSecond: 100, IdleTimeMsPerSecond: 900},
		{RecordsInPerSecond: 20, RecordsOutPerSecond: 7, BusyTimeMsPerSecond: 700, BackPressuredTimeMsPerSecond: 300},
	}
	p := VertexPointOf(at, rates, []Totals{{InputWatermark: 50}, {InputWatermark: 40}})
	want := VertexPoint{At: at, RecordsInPerSecond: 30, RecordsOutPerSecond: 12, BusyTimeMsPerSecond: 700,
		IdleTimeMsPerSecond: 900, BackPressuredTimeMsPerSecond: 300, InputWatermark: 40}
	if p != want {
		t.Errorf("got %+v, want %+v", p, want)
	}
	if p := VertexPointOf(at, rates, []Totals{{InputWatermark: 50}, {InputWatermark: NoWatermark}}); p.InputWatermark != NoWatermark {
		t.Errorf("a subtask without a watermark: the vertex's is %d", p.InputWatermark)
	}
	if p := VertexPointOf(at, nil, nil); p != (VertexPoint{At: at, InputWatermark: NoWatermark}) {
		t.Errorf("no subtask: %+v", p)
	}
}
