package operators

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/flinkgo/flinkgo/state"
)

// joinView is one join input's stored rows, as Flink's JoinRecordStateView
// (OuterJoinRecordStateView for an outer side): a map state under the join
// key, so that a key's rows are one Pebble range scan. The entry's user key
// is the row's unique key when the input has one (one row per unique key:
// an insert replaces, a retraction removes), else the row itself (a
// multiset: the value counts its copies). An outer side also keeps each
// row's number of matches on the other side (Flink's numOfAssociations),
// to know when its padded row must be emitted or retracted.
//
// Value layout: uvarint count | uvarint associations | the row's bytes
// when the user key is a unique key (the row is the user key otherwise).
//
// Without a TTL the keys' records are cached in memory, as the other keyed
// operators keep theirs: lookups and updates touch the cache, and flush
// (at each checkpoint) writes the keys that changed into Pebble, then
// empties the cache past cacheKeys keys (they are read back from Pebble as
// they recur). Pebble on every row cost a memtable skiplist seek per
// lookup, read and write, about 10 to 30 µs a row on this project's VM.
// With a TTL every access goes to Pebble, whose entries carry the write
// time the TTL needs.
type joinView struct {
	m      *state.Map[[]byte, []byte]
	unique bool
	outer  bool
	buf    []byte
	// cache is nil with a TTL; complete: Pebble holds no key the cache
	// lacks (a fresh start, nothing evicted yet).
	cache     map[string]*cachedKey
	complete  bool
	cacheKeys int
}

// cachedKey is the records of one join key in the cache.
type cachedKey struct {
	group int
	recs  []joinRecord
	dirty bool // changed since the last flush
}

// joinRecord is one stored entry met by a lookup.
type joinRecord struct {
	uk    []byte // the entry's user key
	row   []byte // the row's bytes (rowCodec)
	count int    // copies of the row (1 with a unique key)
	assoc int    // matches on the other side (outer sides only)
}

// newJoinView registers the side's map state; cached (no TTL) keeps the
// records in memory, complete when the backend was not restored.
func newJoinView(b *state.Backend, name string, unique, outer bool, opts []state.StateOption, cached, complete bool, cacheKeys int) (*joinView, error) {
	m, err := state.NewMap(b, name, state.BytesCodec{}, state.BytesCodec{}, opts...)
	if err != nil {
		return nil, err
	}
	v := &joinView{m: m, unique: unique, outer: outer, complete: complete, cacheKeys: cacheKeys}
	if cached {
		v.cache = map[string]*cachedKey{}
	}
	return v, nil
}

// stored reads key's records from Pebble.
func (v *joinView) stored(key state.Key) ([]joinRecord, error) {
	var out []joinRecord
	err := v.m.All(key, func(uk, val []byte) error {
		r, err := decodeJoinValue(uk, val, v.unique)
		if err != nil {
			return err
		}
		out = append(out, r)
		return nil
	})
	return out, err
}

// cached returns key's cache entry, loading it from Pebble when it may be
// there; with create false, nil for a key without records.
func (v *joinView) cached(key state.Key, create bool) (*cachedKey, error) {
	if c := v.cache[string(key.Bytes)]; c != nil {
		return c, nil
	}
	var recs []joinRecord
	if !v.complete {
		var err error
		if recs, err = v.stored(key); err != nil {
			return nil, err
		}
	}
	if len(recs) == 0 && !create {
		return nil, nil
	}
	c := &cachedKey{group: key.Group, recs: recs}
	v.cache[string(key.Bytes)] = c
	return c, nil
}

func findRecord(recs []joinRecord, uk []byte) int {
	for i := range recs {
		if bytes.Equal(recs[i].uk, uk) {
			return i
		}
	}
	return -1
}

// flush writes the cached keys that changed into Pebble, and empties the
// cache past cacheKeys keys.
func (v *joinView) flush() error {
	if v.cache == nil {
		return nil
	}
	for k, c := range v.cache {
		if !c.dirty {
			continue
		}
		key := state.Key{Group: c.group, Bytes: []byte(k)}
		if err := v.m.Clear(key); err != nil {
			return err
		}
		for _, r := range c.recs {
			if err := v.m.Put(key, r.uk, v.encode(r.count, r.assoc, r.row)); err != nil {
				return err
			}
		}
		c.dirty = false
		if len(c.recs) == 0 {
			delete(v.cache, k)
		}
	}
	if len(v.cache) > v.cacheKeys {
		v.cache = map[string]*cachedKey{}
		v.complete = false
	}
	return nil
}

func (v *joinView) encode(count, assoc int, row []byte) []byte {
	v.buf = binary.AppendUvarint(v.buf[:0], uint64(count))
	v.buf = binary.AppendUvarint(v.buf, uint64(assoc))
	if v.unique {
		v.buf = append(v.buf, row...)
	}
	return v.buf
}

func decodeJoinValue(uk, val []byte, unique bool) (joinRecord, error) {
	count, n := binary.Uvarint(val)
	if n <= 0 {
		return joinRecord{}, fmt.Errorf("join state: a stored count is corrupt")
	}
	assoc, m := binary.Uvarint(val[n:])
	if m <= 0 {
		return joinRecord{}, fmt.Errorf("join state: a stored match count is corrupt")
	}
	r := joinRecord{uk: uk, row: uk, count: int(count), assoc: int(assoc)}
	if unique {
		r.row = val[n+m:]
	}
	return r, nil
}

// records returns the stored rows of key (a copy: updates of the view
// do not change it).
func (v *joinView) records(key state.Key) ([]joinRecord, error) {
	if v.cache == nil {
		return v.stored(key)
	}
	c, err := v.cached(key, false)
	if c == nil || err != nil {
		return nil, err
	}
	return slices.Clone(c.recs), nil
}

// add stores one more copy of row under uk; assoc is its number of
// matches (kept by outer sides).
func (v *joinView) add(key state.Key, uk, row []byte, assoc int) error {
	if !v.outer {
		assoc = 0
	}
	if v.cache != nil {
		c, err := v.cached(key, true)
		if err != nil {
			return err
		}
		c.dirty = true
		i := findRecord(c.recs, uk)
		switch {
		case i < 0:
			r := joinRecord{uk: bytes.Clone(uk), count: 1, assoc: assoc}
			r.row = r.uk
			if v.unique {
				r.row = bytes.Clone(row)
			}
			c.recs = append(c.recs, r)
		case v.unique: // one row per unique key: the new row replaces
			c.recs[i] = joinRecord{uk: c.recs[i].uk, row: bytes.Clone(row), count: 1, assoc: assoc}
		default:
			c.recs[i].count++
			c.recs[i].assoc = assoc
		}
		return nil
	}
	if v.unique { // one row per unique key: the new row replaces
		return v.m.Put(key, uk, v.encode(1, assoc, row))
	}
	old, ok, err := v.m.Get(key, uk)
	if err != nil {
		return err
	}
	count := 1
	if ok {
		r, err := decodeJoinValue(uk, old, false)
		if err != nil {
			return err
		}
		count = r.count + 1
	}
	return v.m.Put(key, uk, v.encode(count, assoc, row))
}

// retract removes one copy of the row stored under uk (nothing when none
// is stored: its state expired, or it was never inserted).
func (v *joinView) retract(key state.Key, uk []byte) error {
	if v.cache != nil {
		c, err := v.cached(key, false)
		if c == nil || err != nil {
			return err
		}
		i := findRecord(c.recs, uk)
		if i < 0 {
			return nil
		}
		c.dirty = true
		if c.recs[i].count > 1 && !v.unique {
			c.recs[i].count--
		} else {
			c.recs = slices.Delete(c.recs, i, i+1)
		}
		return nil
	}
	if v.unique {
		return v.m.Remove(key, uk)
	}
	old, ok, err := v.m.Get(key, uk)
	if err != nil || !ok {
		return err
	}
	r, err := decodeJoinValue(uk, old, false)
	if err != nil {
		return err
	}
	if r.count <= 1 {
		return v.m.Remove(key, uk)
	}
	return v.m.Put(key, uk, v.encode(r.count-1, r.assoc, r.row))
}

// setAssoc sets the number of matches of a stored row (outer sides).
func (v *joinView) setAssoc(key state.Key, r joinRecord, assoc int) error {
	if v.cache != nil {
		c, err := v.cached(key, false)
		if c == nil || err != nil {
			return err
		}
		if i := findRecord(c.recs, r.uk); i >= 0 {
			c.recs[i].assoc, c.dirty = assoc, true
		}
		return nil
	}
	return v.m.Put(key, r.uk, v.encode(r.count, assoc, r.row))
}
