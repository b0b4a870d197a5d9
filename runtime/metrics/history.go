package metrics

import (
	"sync"
	"time"
)

// VertexPoint is one vertex's figures at one sampling: records per second
// summed over its subtasks, busy, idle and back-pressured time at their
// largest over the subtasks (the subtask that limits the vertex, as
// Flink's web UI shows them), and its lowest input watermark.
type VertexPoint struct {
	At                                      time.Time
	RecordsInPerSecond, RecordsOutPerSecond float64
	// Milliseconds per second, each between 0 and 1000.
	BusyTimeMsPerSecond, IdleTimeMsPerSecond, BackPressuredTimeMsPerSecond float64
	// InputWatermark is the lowest of the subtasks' input watermarks in
	// milliseconds, NoWatermark while any subtask has none.
	InputWatermark int64
}

// VertexPointOf aggregates the rates and readings of a vertex's subtasks
// at a sampling.
func VertexPointOf(at time.Time, rates []Rates, totals []Totals) VertexPoint {
	p := VertexPoint{At: at, InputWatermark: NoWatermark}
	lowest, missing := int64(0), len(totals) == 0
	for i, r := range rates {
		p.RecordsInPerSecond += r.RecordsInPerSecond
		p.RecordsOutPerSecond += r.RecordsOutPerSecond
		p.BusyTimeMsPerSecond = max(p.BusyTimeMsPerSecond, r.BusyTimeMsPerSecond)
		p.IdleTimeMsPerSecond = max(p.IdleTimeMsPerSecond, r.IdleTimeMsPerSecond)
		p.BackPressuredTimeMsPerSecond = max(p.BackPressuredTimeMsPerSecond, r.BackPressuredTimeMsPerSecond)
		switch wm := totals[i].InputWatermark; {
		case wm == NoWatermark:
			missing = true // one subtask without a watermark holds the vertex back
		case i == 0 || wm < lowest:
			lowest = wm
		}
	}
	if !missing {
		p.InputWatermark = lowest
	}
	return p
}

// History keeps the latest points of each vertex of a job, at most
// Capacity per vertex (older ones are dropped), so that a chart of the
// last minutes survives a reload of the page. Its memory is bounded by
// Capacity times the job's vertices (which a rescale does not change).
type History struct {
	capacity int

	mu     sync.Mutex
	series map[string]*ring // by vertex id
}

// ring is a vertex's points: next is where the next one goes.
type ring struct {
	points []VertexPoint
	next   int
}

// NewHistory keeps at most capacity points per vertex.
func NewHistory(capacity int) *History {
	return &History{capacity: max(1, capacity), series: map[string]*ring{}}
}

// Capacity is the most points kept per vertex.
func (h *History) Capacity() int { return h.capacity }

// Add appends p to vertex's points, dropping its oldest when full.
func (h *History) Add(vertex string, p VertexPoint) {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.series[vertex]
	if r == nil {
		r = &ring{points: make([]VertexPoint, 0, h.capacity)}
		h.series[vertex] = r
	}
	if len(r.points) < h.capacity {
		r.points = append(r.points, p)
		return
	}
	r.points[r.next] = p
	r.next = (r.next + 1) % h.capacity
}

// Points returns a copy of vertex's points, oldest first; none for a
// vertex never sampled.
func (h *History) Points(vertex string) []VertexPoint {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.series[vertex]
	if r == nil {
		return nil
	}
	out := make([]VertexPoint, 0, len(r.points))
	out = append(out, r.points[r.next:]...)
	return append(out, r.points[:r.next]...)
}
