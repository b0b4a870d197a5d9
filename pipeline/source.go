package pipeline

import (
	"context"
	"errors"
	"io"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flinkgo/flinkgo/runtime/operator"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/runtime/source"
)

// channelSource is the registry row of the run's source: its one subtask
// reads the caller's batches.
func channelSource(schema *arrow.Schema, in <-chan arrow.RecordBatch) operator.Kind {
	return operator.Kind{
		Kind:   plan.KindSource,
		Schema: func(*plan.Operator, []*arrow.Schema) (*arrow.Schema, error) { return schema, nil },
		OpenSource: func(c *operator.Context) (source.Reader, error) {
			if c.Subtask != 0 {
				return nil, errors.New("pipeline: the channel source runs in one subtask")
			}
			return &channelReader{in: in}, nil
		},
	}
}

// channelReader reads the caller's batches; it is never checkpointed.
type channelReader struct{ in <-chan arrow.RecordBatch }

func (r *channelReader) Next(ctx context.Context) (arrow.RecordBatch, error) {
	for {
		select {
		case b, ok := <-r.in:
			if !ok {
				return nil, io.EOF
			}
			if b.NumRows() == 0 {
				b.Release()
				continue
			}
			return b, nil
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
}

func (r *channelReader) Snapshot() ([]source.SplitState, error) {
	return nil, errors.New("pipeline: a run over a channel takes no checkpoints")
}

func (r *channelReader) Close() error { return nil }
