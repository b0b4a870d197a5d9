package operators

import (
	"encoding/binary"
	"fmt"

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
type joinView struct {
	m      *state.Map[[]byte, []byte]
	unique bool
	outer  bool
	buf    []byte
}

// joinRecord is one stored entry met by a lookup.
type joinRecord struct {
	uk    []byte // the entry's user key
	row   []byte // the row's bytes (rowCodec)
	count int    // copies of the row (1 with a unique key)
	assoc int    // matches on the other side (outer sides only)
}

func newJoinView(b *state.Backend, name string, unique, outer bool, opts []state.StateOption) (*joinView, error) {
	m, err := state.NewMap(b, name, state.BytesCodec{}, state.BytesCodec{}, opts...)
	if err != nil {
		return nil, err
	}
	return &joinView{m: m, unique: unique, outer: outer}, nil
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

// records returns the stored rows of key.
func (v *joinView) records(key state.Key) ([]joinRecord, error) {
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

// add stores one more copy of row under uk; assoc is its number of
// matches (kept by outer sides).
func (v *joinView) add(key state.Key, uk, row []byte, assoc int) error {
	if !v.outer {
		assoc = 0
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
	return v.m.Put(key, r.uk, v.encode(r.count, assoc, r.row))
}
