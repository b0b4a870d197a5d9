package operators

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flinkgo/flinkgo/runtime/operator"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/runtime/watermark"
)

// DefaultWatermarkInterval is pipeline.auto-watermark-interval's default,
// as Flink's.
const DefaultWatermarkInterval = 200 * time.Millisecond

// watermarkAssignerKind is with_watermark's operator, Flink's
// TimestampsAndWatermarksOperator with a bounded out-of-orderness strategy:
// the event time of a row is its time column; rows pass unchanged; every
// pipeline.auto-watermark-interval it sends the greatest event time seen
// minus the delay minus 1 ms when that advanced (watermark.BoundedOutOfOrderness),
// and, with an idle timeout, marks its output idle after that long without
// rows (watermark.WithIdleness). Upstream watermarks stop here, except the
// maximum one at the end of input.
//
// Chained to a file source (operator.Context.SourceSplits), it
// keeps one generator per file of the subtask and sends the minimum over
// the files not idle (watermark.Splits, as Flink's per-split watermarks):
// the files not read yet hold the watermark back, so that reading one file
// to its end does not make the next one's rows late. A file read to its end
// stops counting.
//
// Watermarks are not checkpointed: after a restore the generators start
// again from the rows that come.
func watermarkAssignerKind(opts Options) operator.Kind {
	interval := opts.WatermarkInterval
	if interval <= 0 {
		interval = DefaultWatermarkInterval
	}
	return operator.Kind{
		Kind:   plan.KindWatermarkAssigner,
		Schema: watermarkSchema,
		New: func(c *operator.Context) (operator.Operator, error) {
			return newWatermarkAssigner(c, interval, watermark.SystemClock{})
		},
	}
}

// watermarkSchema is the input's, whose time column must be a timestamp.
func watermarkSchema(op *plan.Operator, in []*arrow.Schema) (*arrow.Schema, error) {
	if _, err := timeColumn(op, in[0]); err != nil {
		return nil, err
	}
	return in[0], nil
}

// timeColumn returns the index of op's time column in s, or an error naming
// the column and its type.
func timeColumn(op *plan.Operator, s *arrow.Schema) (int, error) {
	name := op.Node.WatermarkAssigner.TimeColumn
	idx := s.FieldIndices(name)
	if len(idx) != 1 {
		return 0, fmt.Errorf("with_watermark: the input has no column %q (columns: %v)", name, fieldNames(s))
	}
	if t := s.Field(idx[0]).Type; t.ID() != arrow.TIMESTAMP {
		return 0, fmt.Errorf("with_watermark: time column %q is %s, not a timestamp: convert it first (a cast, or a UDF returning timestamps)", name, t)
	}
	return idx[0], nil
}

// watermarkAssigner is one subtask of with_watermark.
type watermarkAssigner struct {
	operator.Base
	out      operator.WatermarkOutput
	column   int
	name     string
	toMillis func(int64) int64
	interval time.Duration
	now      func() time.Time
	next     time.Time // the next periodic emit

	// One of: per-split generators (chained after a file source), or one
	// generator for the whole input.
	splits   *watermark.Splits
	reporter interface {
		LastSplit() string
		PendingSplits() []string
	}
	known []string // the splits registered in splits
	gen   watermark.Generator
}

func newWatermarkAssigner(c *operator.Context, interval time.Duration, clock watermark.Clock) (*watermarkAssigner, error) {
	col, err := timeColumn(c.Op, c.Input())
	if err != nil {
		return nil, err
	}
	wa := c.Op.Node.WatermarkAssigner
	delay, idle := wa.MaxOutOfOrdernessMs, wa.IdleTimeoutMs
	newGenerator := func() (watermark.Generator, error) {
		g, err := watermark.NewBoundedOutOfOrderness(delay)
		if err != nil || idle == 0 {
			return g, err
		}
		return watermark.NewWithIdleness(g, time.Duration(idle)*time.Millisecond, clock)
	}
	a := &watermarkAssigner{
		out: c.Watermarks, column: col, name: wa.TimeColumn, interval: interval, now: clock.Now,
		toMillis: toMillis(c.Input().Field(col).Type.(*arrow.TimestampType).Unit),
	}
	if c.SourceSplits != nil {
		a.reporter = c.SourceSplits
		a.splits = watermark.NewSplits(newGenerator)
		if err := a.syncSplits(); err != nil {
			return nil, err
		}
	} else if a.gen, err = newGenerator(); err != nil {
		return nil, err
	}
	return a, nil
}

// GeneratesWatermarks marks the operator as making its own watermarks.
func (*watermarkAssigner) GeneratesWatermarks() {}

var _ operator.WatermarkGenerator = (*watermarkAssigner)(nil)

func (a *watermarkAssigner) Open(context.Context) error {
	a.next = a.now().Add(a.interval)
	return nil
}

// Process accounts for the batch's greatest event time (the same, for a
// bounded out-of-orderness generator, as every row's), sends what that
// causes (an active status after idleness) and passes the batch on.
func (a *watermarkAssigner) Process(ctx context.Context, _ int, b arrow.RecordBatch, emit operator.Emit) error {
	if b.NumRows() > 0 {
		ts, err := a.maxEventTime(b)
		if err != nil {
			return err
		}
		var e watermark.Emission
		if a.splits != nil {
			if err := a.syncSplits(); err != nil {
				return err
			}
			if e, err = a.splits.OnEvent(a.reporter.LastSplit(), ts); err != nil {
				return err
			}
		} else {
			e = a.gen.OnEvent(ts)
		}
		if err := a.send(ctx, e); err != nil {
			return err
		}
	}
	b.Retain()
	return emit(ctx, b)
}

// maxEventTime is the greatest event time of b's rows in milliseconds; a
// null time is an error.
func (a *watermarkAssigner) maxEventTime(b arrow.RecordBatch) (int64, error) {
	col := b.Column(a.column).(*array.Timestamp)
	if col.NullN() > 0 {
		for i := range col.Len() {
			if col.IsNull(i) {
				return 0, fmt.Errorf("with_watermark: time column %q is null in a row (row %d of a batch of %d): "+
					"every row needs an event time; filter the nulls out or fill them before with_watermark", a.name, i, col.Len())
			}
		}
	}
	vs := col.TimestampValues()
	hi := vs[0]
	for _, v := range vs[1:] {
		hi = max(hi, v)
	}
	return a.toMillis(int64(hi)), nil
}

// syncSplits registers the source's splits not seen yet and drops the ones
// read to their end.
func (a *watermarkAssigner) syncSplits() error {
	pending := a.reporter.PendingSplits()
	if slices.Equal(pending, a.known) {
		return nil
	}
	for _, id := range a.known {
		if !slices.Contains(pending, id) {
			a.splits.Remove(id)
		}
	}
	for _, id := range pending {
		if !slices.Contains(a.known, id) {
			if err := a.splits.Add(id); err != nil {
				return err
			}
		}
	}
	a.known = slices.Clone(pending)
	return nil
}

// Deadline is the next periodic emit.
func (a *watermarkAssigner) Deadline() (time.Time, bool) { return a.next, true }

// OnTimer is the periodic emit: the watermark when it advanced, or a
// change of idleness.
func (a *watermarkAssigner) OnTimer(ctx context.Context, _ operator.Emit) error {
	a.next = a.now().Add(a.interval)
	return a.send(ctx, a.periodicEmit())
}

func (a *watermarkAssigner) periodicEmit() watermark.Emission {
	if a.splits != nil {
		return a.splits.OnPeriodicEmit()
	}
	return a.gen.OnPeriodicEmit()
}

// OnWatermark stops upstream watermarks, except the maximum one: the end
// of input, on which every window fires (as Flink's
// TimestampsAndWatermarksOperator).
func (a *watermarkAssigner) OnWatermark(_ context.Context, wm operator.Watermark, _ operator.Emit) (operator.Watermark, error) {
	if wm == watermark.MaxWatermark {
		return wm, nil
	}
	return watermark.MinWatermark, nil
}

// send sends e downstream in its order (watermark.Emission).
func (a *watermarkAssigner) send(ctx context.Context, e watermark.Emission) error {
	if e.BecameActive {
		if err := a.out.EmitStatus(ctx, watermark.Active); err != nil {
			return err
		}
	}
	if e.HasWatermark {
		if err := a.out.EmitWatermark(ctx, e.Watermark); err != nil {
			return err
		}
	}
	if e.BecameIdle {
		return a.out.EmitStatus(ctx, watermark.Idle)
	}
	return nil
}

// toMillis converts timestamps of unit u to milliseconds since the epoch,
// rounding down (a microsecond before the epoch is in its millisecond -1).
func toMillis(u arrow.TimeUnit) func(int64) int64 {
	floorDiv := func(d int64) func(int64) int64 {
		return func(v int64) int64 {
			q := v / d
			if v%d < 0 {
				q--
			}
			return q
		}
	}
	switch u {
	case arrow.Second:
		return func(v int64) int64 { return v * 1000 }
	case arrow.Microsecond:
		return floorDiv(1000)
	case arrow.Nanosecond:
		return floorDiv(1_000_000)
	}
	return func(v int64) int64 { return v }
}

func fieldNames(s *arrow.Schema) []string {
	names := make([]string, s.NumFields())
	for i, f := range s.Fields() {
		names[i] = f.Name
	}
	return names
}
