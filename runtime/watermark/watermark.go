package watermark

import (
	"math"
	"strconv"
)

// Watermark is an event time in milliseconds since the epoch: the assertion
// that no more rows with a timestamp at or below it will arrive.
type Watermark int64

const (
	// MinWatermark is the watermark before any has been seen (Flink's
	// Long.MIN_VALUE).
	MinWatermark Watermark = math.MinInt64
	// MaxWatermark is sent at the end of a bounded input: every window fires
	// and every timer runs (Flink's Watermark.MAX_WATERMARK).
	MaxWatermark Watermark = math.MaxInt64
)

// String prints the milliseconds, or MIN/MAX for the two bounds.
func (w Watermark) String() string {
	switch w {
	case MinWatermark:
		return "MIN"
	case MaxWatermark:
		return "MAX"
	}
	return strconv.FormatInt(int64(w), 10)
}

// Status says whether a stream holds back the watermark downstream (Active)
// or is left out of the minimum until it sends again (Idle), as Flink's
// WatermarkStatus.
type Status uint8

const (
	// Active streams take part in the minimum. Every stream starts active.
	Active Status = iota
	// Idle streams are left out of the minimum.
	Idle
)

// String names the status.
func (s Status) String() string {
	if s == Idle {
		return "IDLE"
	}
	return "ACTIVE"
}

// Output receives what an Emission asks to send, in order.
type Output interface {
	EmitWatermark(Watermark)
	EmitStatus(Status)
}

// Emission is what one call asked to send downstream. Send it in this order
// (SendTo does): an Active status first, so that the receiver counts the
// stream again before it sees the watermark; then the watermark; then an
// Idle status, so that the last watermark of a stream going idle still
// arrives. The zero Emission sends nothing.
type Emission struct {
	// BecameActive: send Status Active before the watermark.
	BecameActive bool
	// HasWatermark: send Watermark.
	HasWatermark bool
	Watermark    Watermark
	// BecameIdle: send Status Idle after the watermark.
	BecameIdle bool
}

// IsZero says whether there is nothing to send.
func (e Emission) IsZero() bool { return e == Emission{} }

// SendTo sends the emission to out in its order.
func (e Emission) SendTo(out Output) {
	if e.BecameActive {
		out.EmitStatus(Active)
	}
	if e.HasWatermark {
		out.EmitWatermark(e.Watermark)
	}
	if e.BecameIdle {
		out.EmitStatus(Idle)
	}
}

// then is e followed by next, as one emission. Watermarks only grow in
// every component here, so the later one is the one to send; an Idle in e
// and an Active in next cancel out.
func (e Emission) then(next Emission) Emission {
	if e.BecameIdle && next.BecameActive {
		e.BecameIdle, next.BecameActive = false, false
	}
	e.BecameActive = e.BecameActive || next.BecameActive
	e.BecameIdle = e.BecameIdle || next.BecameIdle
	if next.HasWatermark {
		e.HasWatermark, e.Watermark = true, next.Watermark
	}
	return e
}

func watermarkEmission(w Watermark) Emission {
	return Emission{HasWatermark: true, Watermark: w}
}
