package watermark

import "fmt"

// InputCombiner is the watermark of an operator with several inputs (a
// two-input join, say): the minimum over the inputs that are not idle, never
// going back, idle when every input is, as Flink's
// IndexedCombinedWatermarkStatus inside AbstractStreamOperator. Feed it what
// each input's Valve returns (Input).
//
// As Flink's, a watermark on an idle input makes it active again. Unlike
// Flink's, which sends the status after the watermark, a change to Active is
// returned to be sent before the watermark, so the receiver does not drop it.
type InputCombiner struct {
	inputs   []combinedInput
	combined Watermark
	idle     bool
}

type combinedInput struct {
	watermark Watermark
	idle      bool
}

// NewInputCombiner returns a combiner for n inputs (n >= 1), all active and
// without a watermark.
func NewInputCombiner(n int) *InputCombiner {
	if n < 1 {
		panic(fmt.Sprintf("watermark: an input combiner needs at least one input, got %d", n))
	}
	c := &InputCombiner{inputs: make([]combinedInput, n), combined: MinWatermark}
	for i := range c.inputs {
		c.inputs[i].watermark = MinWatermark
	}
	return c
}

// Watermark is the combined watermark sent so far.
func (c *InputCombiner) Watermark() Watermark { return c.combined }

// Idle says whether every input is idle.
func (c *InputCombiner) Idle() bool { return c.idle }

// InputWatermark feeds watermark w of input i and returns what to send.
func (c *InputCombiner) InputWatermark(i int, w Watermark) Emission {
	in := &c.inputs[i]
	in.idle = false
	if w > in.watermark {
		in.watermark = w
	}
	return c.update()
}

// InputStatus feeds status s of input i and returns what to send.
func (c *InputCombiner) InputStatus(i int, s Status) Emission {
	c.inputs[i].idle = s == Idle
	return c.update()
}

// Input feeds what input i's valve returned, in Emission order.
func (c *InputCombiner) Input(i int, e Emission) Emission {
	var out Emission
	if e.BecameActive {
		out = out.then(c.InputStatus(i, Active))
	}
	if e.HasWatermark {
		out = out.then(c.InputWatermark(i, e.Watermark))
	}
	if e.BecameIdle {
		out = out.then(c.InputStatus(i, Idle))
	}
	return out
}

func (c *InputCombiner) update() Emission {
	allIdle, min := true, MaxWatermark
	for _, in := range c.inputs {
		if !in.idle {
			allIdle = false
			if in.watermark < min {
				min = in.watermark
			}
		}
	}
	var e Emission
	if c.idle != allIdle {
		c.idle = allIdle
		e.BecameIdle, e.BecameActive = allIdle, !allIdle
	}
	if !allIdle && min > c.combined {
		c.combined = min
		e.HasWatermark, e.Watermark = true, min
	}
	return e
}
