package exec

import (
	"context"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flinkgo/flinkgo/runtime/expr"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
	"github.com/flinkgo/flinkgo/runtime/sink"
)

// emitFunc hands a batch downstream and takes ownership of it.
type emitFunc func(ctx context.Context, b arrow.RecordBatch) error

// processor is one subtask of a non-source operator, driven by its task
// goroutine.
type processor interface {
	// process handles one batch of input `input`; the caller keeps b.
	process(ctx context.Context, input int, b arrow.RecordBatch, emit emitFunc) error
	// finish runs when every input has ended: emit what is left.
	finish(ctx context.Context, emit emitFunc) error
	// deadline is when onTimer must run, if ever (a UDF bundle's time).
	deadline() (time.Time, bool)
	onTimer(ctx context.Context, emit emitFunc) error
	// cancel takes the canceled-or-failing path; it never blocks on a
	// worker. Safe from any goroutine.
	cancel(cause error)
	// release frees what the processor holds, after finish or cancel.
	release()
}

// noTimer is embedded by processors without a time trigger.
type noTimer struct{}

func (noTimer) deadline() (time.Time, bool)                     { return time.Time{}, false }
func (noTimer) onTimer(context.Context, emitFunc) error         { return nil }
func (noTimer) cancel(error)                                    {}
func (noTimer) release()                                        {}
func (noTimer) finish(ctx context.Context, emit emitFunc) error { return nil }

func columnExpr(name string) *planpb.Expr {
	return &planpb.Expr{Kind: &planpb.Expr_Column{Column: name}}
}

// selectProc evaluates a projection.
type selectProc struct {
	noTimer
	proj *expr.Projection
}

func newSelect(exprs []*expr.Expr, schema *arrow.Schema) (*selectProc, error) {
	names := make([]string, schema.NumFields())
	for i, f := range schema.Fields() {
		names[i] = f.Name
	}
	p, err := expr.NewProjection(names, exprs)
	if err != nil {
		return nil, err
	}
	return &selectProc{proj: p}, nil
}

func (s *selectProc) process(ctx context.Context, _ int, b arrow.RecordBatch, emit emitFunc) error {
	out, err := s.proj.Apply(ctx, b)
	if err != nil {
		return err
	}
	return emit(ctx, out)
}

// filterProc keeps the rows whose predicate is true.
type filterProc struct {
	noTimer
	f *expr.Filter
}

func (p *filterProc) process(ctx context.Context, _ int, b arrow.RecordBatch, emit emitFunc) error {
	out, err := p.f.Apply(ctx, b)
	if err != nil {
		return err
	}
	if out.NumRows() == 0 {
		out.Release()
		return nil
	}
	return emit(ctx, out)
}

// unionProc forwards every input, giving batches the union's schema (the
// inputs' schemas are equal up to field metadata).
type unionProc struct {
	noTimer
	schema *arrow.Schema
}

func (u *unionProc) process(ctx context.Context, _ int, b arrow.RecordBatch, emit emitFunc) error {
	return emit(ctx, array.NewRecordBatch(u.schema, b.Columns(), b.NumRows()))
}

// sinkProc writes into a sink.Writer: published on finish, dropped on
// cancel.
type sinkProc struct {
	noTimer
	w       sink.Writer
	file    bool // a file sink (exactly-once), not print or collect
	written bool
	// publishAtEnd, when set, takes a file sink's last parts at the end of
	// its input, hidden: the job publishes them once every task has
	// finished (restore.go), so that a restart before then replays no row
	// of a published part.
	publishAtEnd func(sink.SinkState)
}

func (s *sinkProc) process(_ context.Context, _ int, b arrow.RecordBatch, _ emitFunc) error {
	return s.w.Write(b)
}

func (s *sinkProc) finish(context.Context, emitFunc) error {
	if s.publishAtEnd != nil {
		st, err := s.w.PreCommit(finalCheckpoint)
		if err != nil {
			return err
		}
		s.publishAtEnd(st)
		return nil // release's Abort keeps pending parts
	}
	s.written = true
	return s.w.Close()
}

func (s *sinkProc) release() {
	if !s.written {
		s.w.Abort()
	}
}
