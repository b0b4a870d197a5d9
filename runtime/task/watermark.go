package task

import (
	"context"

	"github.com/flinkgo/flinkgo/runtime/operator"
	"github.com/flinkgo/flinkgo/runtime/watermark"
)

// Watermarks travel in-band, as Flink's: a producer sends a watermark (or
// an idle/active status) to every channel of every edge leaving its chain,
// after the batches before it. A task with producers keeps a
// watermark.Valve over them (one channel per producer, whatever input of
// the operator it feeds: the minimum over all of them is the minimum over
// each input's minimum); when its output grows the task calls the chain's
// OnWatermark hooks upstream first, each operator emitting what the
// watermark causes before passing it on. A source task sends the maximum
// watermark when its input ends. Nothing here is checkpointed: after a
// restore the generators make watermarks again.

// onEvent feeds a watermark or status message of producer m.producer into
// the task's valve and sends on what it lets through.
func (t *Task) onEvent(ctx context.Context, m message) error {
	var e watermark.Emission
	if m.event == watermarkEvent {
		e = t.valve.InputWatermark(m.producer, m.wm)
	} else {
		e = t.valve.InputStatus(m.producer, m.status)
	}
	if e.BecameActive {
		if err := t.head.onStatus(ctx, watermark.Active); err != nil {
			return err
		}
	}
	if e.HasWatermark {
		t.metrics.InputWatermark.Store(int64(e.Watermark))
		if err := t.head.onWatermark(ctx, e.Watermark); err != nil {
			return err
		}
	}
	if e.BecameIdle {
		return t.head.onStatus(ctx, watermark.Idle)
	}
	return nil
}

// onWatermark runs l's OnWatermark hook when wm is greater than the last
// one it got, and forwards what the hook returns.
func (l *link) onWatermark(ctx context.Context, wm watermark.Watermark) error {
	if wm <= l.wmIn {
		return nil
	}
	l.wmIn = wm
	out := wm
	if l.proc != nil {
		if err := l.call(func() (err error) {
			out, err = l.proc.OnWatermark(ctx, wm, l.emit)
			return err
		}); err != nil {
			return err
		}
	}
	return l.forwardWatermark(ctx, out)
}

// forwardWatermark sends wm to l's chained operators and out edges when it
// is greater than the last l forwarded.
func (l *link) forwardWatermark(ctx context.Context, wm watermark.Watermark) error {
	if wm <= l.wmOut {
		return nil
	}
	l.wmOut = wm
	for _, c := range l.children {
		if err := c.onWatermark(ctx, wm); err != nil {
			return err
		}
	}
	return l.outs.watermark(ctx, wm)
}

// onStatus passes an upstream status on, unless l makes its own.
func (l *link) onStatus(ctx context.Context, s watermark.Status) error {
	if _, own := l.proc.(operator.WatermarkGenerator); own {
		return nil
	}
	return l.forwardStatus(ctx, s)
}

// forwardStatus sends a change of l's status to its chained operators and
// out edges.
func (l *link) forwardStatus(ctx context.Context, s watermark.Status) error {
	if s == l.status {
		return nil
	}
	l.status = s
	for _, c := range l.children {
		if err := c.onStatus(ctx, s); err != nil {
			return err
		}
	}
	return l.outs.status(ctx, s)
}

// linkOutput is the operator.WatermarkOutput of one link: what its
// operator generates goes to what follows it.
type linkOutput struct{ l *link }

func (o linkOutput) EmitWatermark(ctx context.Context, wm watermark.Watermark) error {
	return o.l.forwardWatermark(ctx, wm)
}

func (o linkOutput) EmitStatus(ctx context.Context, s watermark.Status) error {
	return o.l.forwardStatus(ctx, s)
}
