package chainrun

import (
	"context"
	"errors"
	"io"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flinkgo/flinkgo/runtime/operator"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/runtime/source"
)

// subtask is one parallel instance of the chain: the batches the
// distributor gave it, and its results in its input order (from the
// collect sink of its task).
type subtask struct {
	in  chan arrow.RecordBatch // closed by the distributor
	out chan arrow.RecordBatch // closed by Run once every task has ended
}

// Channel capacities: enough slack that round-robin distribution and
// in-order merging keep every worker busy.
const (
	inBuffer  = 8
	outBuffer = 8
)

// releaseInput frees batches the distributor handed over that no task
// read (a failed run), until it closes the channel.
func (s *subtask) releaseInput() {
	for b := range s.in {
		b.Release()
	}
}

// channelSource is the registry row of the run's source: subtask i reads
// the batches the distributor gives subtask i.
func channelSource(schema *arrow.Schema, subtasks []*subtask) operator.Kind {
	return operator.Kind{
		Kind:   plan.KindSource,
		Schema: func(*plan.Operator, []*arrow.Schema) (*arrow.Schema, error) { return schema, nil },
		OpenSource: func(c *operator.Context) (source.Reader, error) {
			return &channelReader{in: subtasks[c.Subtask].in}, nil
		},
	}
}

// channelReader reads one subtask's batches; it is never checkpointed.
type channelReader struct{ in <-chan arrow.RecordBatch }

func (r *channelReader) Next(ctx context.Context) (arrow.RecordBatch, error) {
	select {
	case b, ok := <-r.in:
		if !ok {
			return nil, io.EOF
		}
		return b, nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

func (r *channelReader) Snapshot() ([]source.SplitState, error) {
	return nil, errors.New("chainrun: a run over a channel takes no checkpoints")
}

func (r *channelReader) Close() error { return nil }
