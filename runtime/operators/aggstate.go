package operators

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/flinkgo/flinkgo/runtime/checkpoint"
	"github.com/flinkgo/flinkgo/runtime/operator"
	"github.com/flinkgo/flinkgo/state"
)

// setupState prepares the aggregation's keyed state (keyed.go): the
// groups, each under its key and key group, as one value state.
func (p *aggProc) setupState(ctx context.Context, c *operator.Context, cacheGroups int) error {
	return p.keyed.setup(ctx, c, "groups", cacheGroups, p.ttlOptions()...)
}

// load reads a group from the backend, if it may be there.
func (p *aggProc) load(k state.Key) (*group, bool, error) {
	if p.keyed.complete {
		return nil, false, nil
	}
	data, ok, err := p.keyed.values.Get(k)
	if err != nil || !ok {
		return nil, false, err
	}
	g, err := p.decodeGroup(data)
	if err != nil {
		return nil, false, err
	}
	g.stateKey = state.Key{Group: k.Group, Bytes: append([]byte(nil), k.Bytes...)}
	return g, true, nil
}

// flush writes the groups changed since the last flush.
func (p *aggProc) flush() error {
	for _, g := range p.list {
		if !g.dirty {
			continue
		}
		if g.rows == 0 && !g.emitted {
			// Every row was retracted (and -D emitted): as Flink, the
			// key's state goes.
			if err := p.keyed.values.Clear(g.stateKey); err != nil {
				return err
			}
			g.dirty = false
			continue
		}
		var err error
		if p.keyed.buf, err = p.encodeGroup(p.keyed.buf[:0], g); err != nil {
			return err
		}
		if err := p.keyed.values.Put(g.stateKey, p.keyed.buf); err != nil {
			return err
		}
		g.dirty = false
	}
	return nil
}

// loadAll makes list hold every group, reading the backend when some
// groups are only there.
func (p *aggProc) loadAll() error {
	if p.keyed.complete {
		return nil
	}
	if err := p.flush(); err != nil {
		return err
	}
	p.forgetGroups()
	return p.keyed.values.ForEach(func(k state.Key, data []byte) error {
		g, err := p.decodeGroup(data)
		if err != nil {
			return err
		}
		g.stateKey = k
		p.list = append(p.list, g)
		return nil
	})
}

// forgetGroups empties the in-memory groups (they are in the backend).
func (p *aggProc) forgetGroups() {
	for _, g := range p.list {
		g.kept.release()
	}
	p.list = nil
	p.index = map[string]int{}
	p.intIndex = map[int64]int{}
	p.smallIndex = nil
	p.nullGroup = -1
	p.keyed.complete = false
}

// SnapshotState writes the changed groups into the backend and takes a
// Pebble checkpoint of it (the synchronous part, hard links); takePersist
// hands over the writing out, which runs while the task goes on.
func (p *aggProc) SnapshotState(ctx context.Context, target checkpoint.Target, emit operator.Emit, _ *checkpoint.SubtaskState) error {
	if p.updates {
		// Before the barrier, and before groups may leave memory.
		if err := p.emitChanged(ctx, emit); err != nil {
			return err
		}
	}
	if err := p.keyed.open(); err != nil {
		return err
	}
	expired, err := p.dropExpired()
	if err != nil {
		return err
	}
	if err := p.flush(); err != nil {
		return err
	}
	if expired || len(p.list) > p.keyed.cacheGroups {
		p.forgetGroups()
	}
	return p.keyed.snapshot(target)
}

// TakePersist returns the asynchronous part of the last snapshot
// (keyedState.takePersist).
func (p *aggProc) TakePersist() func(context.Context, *checkpoint.SubtaskState) error {
	return p.keyed.takePersist()
}

// Release stops the UDAFs' workers (closed already after Finish), frees
// the rows kept for them, closes the backend and removes its scratch
// directory.
func (p *aggProc) Release() {
	if p.udafs != nil && !p.udafs.closed {
		p.udafs.cancel()
	}
	for _, g := range p.list {
		g.kept.release()
	}
	p.keyed.release()
}

// encodeGroup appends g's keys and accumulators, then (with pandas UDAFs)
// its kept rows.
func (p *aggProc) encodeGroup(buf []byte, g *group) ([]byte, error) {
	buf = binary.AppendUvarint(buf, uint64(len(g.key)))
	for i, k := range g.key {
		buf = appendBool(buf, g.null[i])
		buf = appendString(buf, k)
	}
	for i := range g.acc {
		buf = appendAccumulator(buf, &g.acc[i])
	}
	// The changelog's part: the row count and what was emitted last.
	buf = binary.AppendVarint(buf, g.rows)
	buf = appendBool(buf, g.emitted)
	if g.emitted {
		for i := range g.prev {
			buf = appendAccumulator(buf, &g.prev[i])
		}
	}
	if p.udafs != nil {
		return p.udafs.appendKept(buf, &g.kept)
	}
	return buf, nil
}

func (p *aggProc) decodeGroup(data []byte) (*group, error) {
	r := groupReader{data: data}
	n := int(r.uvarint())
	g := &group{key: make([]string, 0, n), null: make([]bool, 0, n), acc: make([]accumulator, len(p.aggs))}
	for range n {
		g.null = append(g.null, r.bool())
		g.key = append(g.key, r.string())
	}
	for i := range g.acc {
		r.accumulator(&g.acc[i])
	}
	if len(r.data) == 0 && r.err == nil {
		// Written before changelogs: the group held rows, and in updates
		// mode it was emitted as it is (an upsert row).
		g.rows, g.emitted, g.prev = 1, true, slices.Clone(g.acc)
	} else {
		g.rows, g.emitted = r.varint(), r.bool()
		if g.emitted {
			g.prev = make([]accumulator, len(p.aggs))
			for i := range g.prev {
				r.accumulator(&g.prev[i])
			}
		}
		if p.udafs != nil && r.err == nil {
			if err := p.udafs.readKept(&r, &g.kept); err != nil {
				return nil, fmt.Errorf("keyed state holds a group this aggregation cannot read: %w", err)
			}
		}
	}
	if r.err != nil || len(r.data) != 0 || n != len(p.keys) {
		g.kept.release()
		return nil, fmt.Errorf("keyed state holds a group this aggregation cannot read (%d keys, want %d): was the aggregation changed since the snapshot?", n, len(p.keys))
	}
	return g, nil
}

func appendBool(buf []byte, v bool) []byte {
	if v {
		return append(buf, 1)
	}
	return append(buf, 0)
}

func appendString(buf []byte, s string) []byte {
	return append(binary.AppendUvarint(buf, uint64(len(s))), s...)
}

// groupReader decodes what encodeGroup wrote; err records the first
// problem.
type groupReader struct {
	data []byte
	err  error
}

var errShortGroup = errors.New("truncated group")

func (r *groupReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.data)
	if n <= 0 {
		r.err, r.data = errShortGroup, nil
		return 0
	}
	r.data = r.data[n:]
	return v
}

func (r *groupReader) varint() int64 {
	v, n := binary.Varint(r.data)
	if n <= 0 {
		r.err, r.data = errShortGroup, nil
		return 0
	}
	r.data = r.data[n:]
	return v
}

func (r *groupReader) float() float64 {
	if len(r.data) < 8 {
		r.err, r.data = errShortGroup, nil
		return 0
	}
	v := math.Float64frombits(binary.LittleEndian.Uint64(r.data))
	r.data = r.data[8:]
	return v
}

func (r *groupReader) bool() bool {
	if len(r.data) < 1 {
		r.err, r.data = errShortGroup, nil
		return false
	}
	v := r.data[0] == 1
	r.data = r.data[1:]
	return v
}

func (r *groupReader) string() string {
	n := r.uvarint()
	if uint64(len(r.data)) < n {
		r.err, r.data = errShortGroup, nil
		return ""
	}
	s := string(r.data[:n])
	r.data = r.data[n:]
	return s
}
