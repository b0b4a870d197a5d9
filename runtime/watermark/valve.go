package watermark

import "fmt"

// Valve is a task's input watermark over its input channels, as Flink's
// StatusWatermarkValve:
//
//   - each channel's watermark is monotone: a lower one is ignored;
//   - the output is the minimum over the aligned channels, sent when it
//     grows;
//   - an idle channel is left out of the minimum (its watermarks are ignored
//     while it is idle); when every channel is idle the valve sends Idle,
//     first flushing the greatest channel watermark if the last channel to go
//     idle was the one holding the minimum;
//   - a channel that turns active again rejoins the minimum only once its
//     watermark has caught up with the last one sent, so the output never
//     goes back.
//
// Finding the minimum costs O(log channels) per watermark (a heap of the
// aligned channels).
type Valve struct {
	channels []channel
	aligned  alignedHeap
	active   int // channels whose status is Active
	last     Watermark
	status   Status
}

type channel struct {
	watermark Watermark
	status    Status
	// heapIndex is the channel's place in the aligned heap, or -1 when it is
	// not aligned.
	heapIndex int
}

// ChannelState is one channel as the valve sees it.
type ChannelState struct {
	Watermark Watermark
	Status    Status
	// Aligned: the channel takes part in the minimum.
	Aligned bool
}

// NewValve returns a valve for n input channels (n >= 1), all active,
// aligned and without a watermark.
func NewValve(n int) *Valve {
	if n < 1 {
		panic(fmt.Sprintf("watermark: a valve needs at least one input channel, got %d", n))
	}
	v := &Valve{channels: make([]channel, n), active: n, last: MinWatermark}
	v.aligned.channels = v.channels
	for i := range v.channels {
		v.channels[i] = channel{watermark: MinWatermark, heapIndex: -1}
		v.aligned.push(i)
	}
	return v
}

// Watermark is the last watermark sent (MinWatermark before any).
func (v *Valve) Watermark() Watermark { return v.last }

// Status is the valve's status as last sent.
func (v *Valve) Status() Status { return v.status }

// Channel returns channel ch's state.
func (v *Valve) Channel(ch int) ChannelState {
	c := v.channels[ch]
	return ChannelState{Watermark: c.watermark, Status: c.status, Aligned: c.heapIndex >= 0}
}

// InputWatermark feeds watermark w of channel ch and returns what to send.
func (v *Valve) InputWatermark(ch int, w Watermark) Emission {
	c := &v.channels[ch]
	if v.status != Active || c.status != Active || w <= c.watermark {
		return Emission{}
	}
	c.watermark = w
	if c.heapIndex >= 0 {
		v.aligned.fix(c.heapIndex)
	} else if w >= v.last {
		v.aligned.push(ch) // caught up: it rejoins the minimum
	}
	return v.advanceToMinAligned()
}

// InputStatus feeds status s of channel ch and returns what to send.
func (v *Valve) InputStatus(ch int, s Status) Emission {
	c := &v.channels[ch]
	switch {
	case s == Idle && c.status == Active:
		c.status = Idle
		v.active--
		if c.heapIndex >= 0 {
			v.aligned.remove(c.heapIndex)
		}
		if v.active == 0 {
			// No channel will advance any more: flush the greatest watermark,
			// unless an earlier channel going idle already advanced past this
			// one's.
			var e Emission
			if c.watermark == v.last {
				e = v.flushMax()
			}
			v.status = Idle
			e.BecameIdle = true
			return e
		}
		if c.watermark == v.last {
			return v.advanceToMinAligned()
		}
	case s == Active && c.status == Idle:
		c.status = Active
		v.active++
		if c.watermark >= v.last {
			v.aligned.push(ch)
		}
		if v.status == Idle {
			v.status = Active
			return Emission{BecameActive: true}
		}
	}
	return Emission{}
}

// Input feeds what an upstream component returned for channel ch, in
// Emission order, and returns what to send.
func (v *Valve) Input(ch int, e Emission) Emission {
	var out Emission
	if e.BecameActive {
		out = out.then(v.InputStatus(ch, Active))
	}
	if e.HasWatermark {
		out = out.then(v.InputWatermark(ch, e.Watermark))
	}
	if e.BecameIdle {
		out = out.then(v.InputStatus(ch, Idle))
	}
	return out
}

func (v *Valve) advanceToMinAligned() Emission {
	if len(v.aligned.heap) == 0 {
		return Emission{}
	}
	if min := v.channels[v.aligned.heap[0]].watermark; min > v.last {
		v.last = min
		return watermarkEmission(min)
	}
	return Emission{}
}

func (v *Valve) flushMax() Emission {
	max := MinWatermark
	for _, c := range v.channels {
		if c.watermark > max {
			max = c.watermark
		}
	}
	if max > v.last {
		v.last = max
		return watermarkEmission(max)
	}
	return Emission{}
}

// alignedHeap is a min-heap of channel indices by watermark that keeps each
// channel's heap index, so a channel can be moved or removed in O(log n).
type alignedHeap struct {
	heap     []int
	channels []channel
}

func (h *alignedHeap) less(i, j int) bool {
	return h.channels[h.heap[i]].watermark < h.channels[h.heap[j]].watermark
}

func (h *alignedHeap) swap(i, j int) {
	h.heap[i], h.heap[j] = h.heap[j], h.heap[i]
	h.channels[h.heap[i]].heapIndex = i
	h.channels[h.heap[j]].heapIndex = j
}

func (h *alignedHeap) push(ch int) {
	h.heap = append(h.heap, ch)
	i := len(h.heap) - 1
	h.channels[ch].heapIndex = i
	h.up(i)
}

func (h *alignedHeap) remove(i int) {
	last := len(h.heap) - 1
	ch := h.heap[i]
	if i != last {
		h.swap(i, last)
	}
	h.heap = h.heap[:last]
	h.channels[ch].heapIndex = -1
	if i != last {
		h.fix(i)
	}
}

func (h *alignedHeap) fix(i int) {
	if !h.down(i) {
		h.up(i)
	}
}

func (h *alignedHeap) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !h.less(i, parent) {
			return
		}
		h.swap(i, parent)
		i = parent
	}
}

// down sinks i and says whether it moved.
func (h *alignedHeap) down(i int) bool {
	start := i
	for {
		smallest, left, right := i, 2*i+1, 2*i+2
		if left < len(h.heap) && h.less(left, smallest) {
			smallest = left
		}
		if right < len(h.heap) && h.less(right, smallest) {
			smallest = right
		}
		if smallest == i {
			return i != start
		}
		h.swap(i, smallest)
		i = smallest
	}
}
