package operators

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/flinkgo/flinkgo/runtime/checkpoint"
	"github.com/flinkgo/flinkgo/runtime/operator"
	"github.com/flinkgo/flinkgo/runtime/window"
	"github.com/flinkgo/flinkgo/state"
)

// The window aggregation's keyed state: one value per key holding its
// windows in flight (slices or sessions, with partial aggregates), beside
// the timers of its "window-timers" service in the same backend. The
// backend is open from the start, as the timers live in it.

func (p *windowProc) setupState(ctx context.Context, c *operator.Context, cacheGroups int) error {
	if err := p.keyed.setup(ctx, c, "windows", cacheGroups); err != nil {
		return err
	}
	if err := p.keyed.open(); err != nil {
		return err
	}
	timers, err := state.NewTimerService(p.keyed.backend, "window-timers")
	if err != nil {
		return err
	}
	p.timers = timers
	return nil
}

// loadKey reads a key's windows from the backend, nil when it holds none.
func (p *windowProc) loadKey(k state.Key) (*winKey, error) {
	if p.keyed.complete {
		return nil, nil
	}
	if _, gone := p.deleted[string(k.Bytes)]; gone {
		return nil, nil
	}
	data, ok, err := p.keyed.values.Get(k)
	if err != nil || !ok {
		return nil, err
	}
	wk, err := p.decodeKey(data)
	if err != nil {
		return nil, err
	}
	wk.stateKey = state.Key{Group: k.Group, Bytes: append([]byte(nil), k.Bytes...)}
	p.index[string(wk.stateKey.Bytes)] = wk
	return wk, nil
}

// timerKey returns the windows of a timer's key, nil when none are left.
func (p *windowProc) timerKey(k state.Key) (*winKey, error) {
	if wk, ok := p.index[string(k.Bytes)]; ok {
		return wk, nil
	}
	return p.loadKey(k)
}

// SnapshotState writes the keys changed since the last checkpoint into
// the backend, deletes those with no window left, and takes a Pebble
// checkpoint (timers included); TakePersist writes it out.
func (p *windowProc) SnapshotState(_ context.Context, target checkpoint.Target, _ operator.Emit, _ *checkpoint.SubtaskState) error {
	for _, k := range p.index {
		if !k.dirty {
			continue
		}
		var err error
		if p.keyed.buf, err = p.encodeKey(p.keyed.buf[:0], k); err != nil {
			return err
		}
		if err := p.keyed.values.Put(k.stateKey, p.keyed.buf); err != nil {
			return err
		}
		k.dirty = false
	}
	for name, k := range p.deleted {
		if err := p.keyed.values.Clear(k); err != nil {
			return err
		}
		delete(p.deleted, name)
	}
	if len(p.index) > p.keyed.cacheGroups {
		p.releaseKeys()
		p.index = map[string]*winKey{}
		p.keyed.complete = false
	}
	return p.keyed.snapshot(target)
}

// TakePersist returns the asynchronous part of the last snapshot.
func (p *windowProc) TakePersist() func(context.Context, *checkpoint.SubtaskState) error {
	return p.keyed.takePersist()
}

// Release stops the UDAFs' workers (closed already after Finish), frees the
// rows kept for them, closes the backend and removes its scratch
// directory.
func (p *windowProc) Release() {
	if p.udafs != nil && !p.udafs.closed {
		p.udafs.cancel()
	}
	p.releaseKeys()
	releaseRows(p.out)
	p.keyed.release()
}

// encodeKey appends a key's values and its windows in flight (with the
// pandas UDAFs, each slot's kept rows as an Arrow IPC stream after its
// accumulators: a length, 0 for none).
func (p *windowProc) encodeKey(buf []byte, k *winKey) ([]byte, error) {
	buf = binary.AppendUvarint(buf, uint64(len(k.key)))
	for i, v := range k.key {
		buf = appendBool(buf, k.null[i])
		buf = appendString(buf, v)
	}
	buf = binary.AppendUvarint(buf, uint64(len(k.slots)))
	for _, s := range k.slots {
		buf = binary.AppendVarint(buf, s.w.Start)
		buf = binary.AppendVarint(buf, s.w.End)
		buf = binary.AppendVarint(buf, s.rows)
		for i := range s.acc {
			buf = appendAccumulator(buf, &s.acc[i])
			buf = appendAccExt(buf, s.acc[i].ext)
		}
		if p.udafs != nil {
			var err error
			if buf, err = p.udafs.appendKept(buf, &s.kept); err != nil {
				return nil, err
			}
		}
	}
	var sessions []window.Mapping
	if k.sessions != nil {
		sessions = k.sessions.Mappings()
	}
	buf = binary.AppendUvarint(buf, uint64(len(sessions)))
	for _, m := range sessions {
		for _, t := range []int64{m.Window.Start, m.Window.End, m.StateWindow.Start, m.StateWindow.End} {
			buf = binary.AppendVarint(buf, t)
		}
	}
	return buf, nil
}

func (p *windowProc) decodeKey(data []byte) (*winKey, error) {
	r := groupReader{data: data}
	bad := func(why string) error {
		return fmt.Errorf("window: keyed state holds a key this window aggregation cannot read (%s): was the aggregation changed since the snapshot?", why)
	}
	n := int(r.uvarint())
	if n != len(p.keys) {
		return nil, bad(fmt.Sprintf("%d keys, want %d", n, len(p.keys)))
	}
	k := &winKey{}
	for range n {
		k.null = append(k.null, r.bool())
		k.key = append(k.key, r.string())
	}
	slots := r.uvarint()
	for range slots {
		if r.err != nil {
			break
		}
		s := &winSlot{acc: make([]accumulator, len(p.aggs))}
		s.w.Start, s.w.End, s.rows = r.varint(), r.varint(), r.varint()
		for i := range s.acc {
			r.accumulator(&s.acc[i])
			s.acc[i].ext = r.accExt()
		}
		k.slots = append(k.slots, s)
		if p.udafs != nil && r.err == nil {
			if err := p.udafs.readKept(&r, &s.kept); err != nil {
				releaseSlots(k.slots)
				return nil, bad(err.Error())
			}
		}
	}
	slices.SortFunc(k.slots, func(a, b *winSlot) int { return cmp.Compare(a.w.End, b.w.End) })
	var mappings []window.Mapping
	sessions := r.uvarint()
	for range sessions {
		if r.err != nil {
			break
		}
		var m window.Mapping
		m.Window.Start, m.Window.End, m.StateWindow.Start, m.StateWindow.End = r.varint(), r.varint(), r.varint(), r.varint()
		mappings = append(mappings, m)
	}
	if r.err != nil || len(r.data) != 0 {
		releaseSlots(k.slots)
		return nil, bad("truncated or longer than expected")
	}
	if p.sessions {
		set, err := window.NewMergingSet(mappings)
		if err != nil {
			releaseSlots(k.slots)
			return nil, bad(err.Error())
		}
		k.sessions = set
	} else if len(mappings) > 0 {
		return nil, bad("sessions in a window that has none")
	}
	return k, nil
}
