package operators

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"

	"github.com/flinkgo/flinkgo/runtime/checkpoint"
	"github.com/flinkgo/flinkgo/runtime/operator"
	"github.com/flinkgo/flinkgo/runtime/partition"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/state"
)

// dropDuplicatesKind keeps the first row seen of each combination of the
// subset's values (Spark's dropDuplicates). The combinations seen are keyed
// state, so the operator checkpoints, restores and rescales as a keyed
// aggregation does; it emits as rows come, in bounded and unbounded jobs
// alike.
func dropDuplicatesKind(opts Options) operator.Kind {
	return operator.Kind{
		Kind:   plan.KindDropDuplicates,
		Schema: sameAsInput,
		State:  operator.StateDescriptor{Keyed: true, What: "the keys seen"},
		New: func(c *operator.Context) (operator.Operator, error) {
			p := &dropDuplicates{seen: map[string]struct{}{}, maxP: c.MaxParallelism}
			in := c.Input()
			for _, name := range c.Op.Node.DropDuplicates.Subset {
				idx := in.FieldIndices(name)
				if len(idx) == 0 {
					return nil, fmt.Errorf("subset column %q is not a column of %s", name, in)
				}
				p.keys = append(p.keys, idx[0])
			}
			if err := p.keyed.setup(context.Background(), c, "seen", opts.KeyedCacheGroups); err != nil {
				p.Release()
				return nil, err
			}
			return p, nil
		},
	}
}

// dropDuplicates is one subtask: seen holds the encoded keys it has seen
// (all of them while keyed.complete, else a cache of the backend), fresh
// those not yet written to the backend.
type dropDuplicates struct {
	operator.Base
	keys   []int
	maxP   int
	seen   map[string]struct{}
	fresh  []state.Key
	keyed  keyedState
	keyBuf []byte
}

// present is what the backend holds under a key seen.
var present = []byte{1}

func (p *dropDuplicates) Process(ctx context.Context, _ int, b arrow.RecordBatch, emit operator.Emit) error {
	n := int(b.NumRows())
	keep := make([]bool, n)
	kept := 0
	var kgs []int32 // the rows' key groups, computed at the first new key
	for row := range n {
		p.keyBuf = p.keyBuf[:0]
		for _, k := range p.keys {
			p.keyBuf = appendKey(p.keyBuf, b.Column(k), row)
		}
		if _, ok := p.seen[string(p.keyBuf)]; ok {
			continue
		}
		if kgs == nil {
			var err error
			if kgs, err = partition.KeyGroups(b, p.keys, p.maxP); err != nil {
				return err
			}
		}
		key := state.Key{Group: int(kgs[row]), Bytes: []byte(string(p.keyBuf))}
		p.seen[string(p.keyBuf)] = struct{}{}
		if !p.keyed.complete {
			_, inBackend, err := p.keyed.values.Get(key)
			if err != nil {
				return err
			}
			if inBackend {
				continue
			}
		}
		p.fresh = append(p.fresh, key)
		keep[row] = true
		kept++
	}
	switch kept {
	case 0:
		return nil
	case n:
		b.Retain()
		return emit(ctx, b)
	}
	mb := array.NewBooleanBuilder(compute.GetAllocator(ctx))
	defer mb.Release()
	mb.AppendValues(keep, nil)
	mask := mb.NewBooleanArray()
	defer mask.Release()
	out, err := compute.FilterRecordBatch(ctx, b, mask, compute.DefaultFilterOptions())
	if err != nil {
		return err
	}
	return emit(ctx, out)
}

// SnapshotState writes the keys seen since the last checkpoint into the
// backend, forgets them from memory past the cache size, and snapshots the
// backend; TakePersist hands over the writing out.
func (p *dropDuplicates) SnapshotState(_ context.Context, target checkpoint.Target, _ operator.Emit, _ *checkpoint.SubtaskState) error {
	if err := p.keyed.open(); err != nil {
		return err
	}
	for _, k := range p.fresh {
		if err := p.keyed.values.Put(k, present); err != nil {
			return err
		}
	}
	p.fresh = p.fresh[:0]
	if len(p.seen) > p.keyed.cacheGroups {
		p.seen = map[string]struct{}{}
		p.keyed.complete = false
	}
	return p.keyed.snapshot(target)
}

func (p *dropDuplicates) TakePersist() func(context.Context, *checkpoint.SubtaskState) error {
	return p.keyed.takePersist()
}

func (p *dropDuplicates) Release() { p.keyed.release() }
