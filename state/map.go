package state

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// Map is a keyed state holding a map per key, as Flink's MapState. Each
// entry is its own Pebble key (the state key followed by the encoded user
// key), so point accesses do not read the whole map, and a key's entries
// iterate in byte order of the encoded user keys. With a TTL each entry has
// its own timestamp.
type Map[UK, UV any] struct {
	c       stateCore
	ukCodec Codec[UK]
	uvCodec Codec[UV]
}

// NewMap registers the map state name in b; ukCodec encodes the user keys
// (it must be deterministic), uvCodec the user values.
func NewMap[UK, UV any](b *Backend, name string, ukCodec Codec[UK], uvCodec Codec[UV], opts ...StateOption) (*Map[UK, UV], error) {
	if ukCodec == nil || uvCodec == nil {
		return nil, fmt.Errorf("%w: map state %q: nil codec", ErrInvalidState, name)
	}
	c, err := newCore(b, name, kindMap, opts)
	if err != nil {
		return nil, err
	}
	return &Map[UK, UV]{c: c, ukCodec: ukCodec, uvCodec: uvCodec}, nil
}

// Name returns the state's name.
func (s *Map[UK, UV]) Name() string { return s.c.keys.name }

// entryKey returns the key of (k, uk), valid until the next call.
func (s *Map[UK, UV]) entryKey(k Key, uk UK) []byte {
	s.c.keys.buf = s.ukCodec.Encode(s.c.keys.entry(k), uk)
	return s.c.keys.buf
}

// Get returns the value of uk in k's map, and false when there is none.
func (s *Map[UK, UV]) Get(k Key, uk UK) (UV, bool, error) {
	if err := s.c.check(k); err != nil {
		var zero UV
		return zero, false, err
	}
	v, ok, err := readDecoded(&s.c, s.entryKey(k, uk), s.uvCodec, true)
	if err != nil {
		return v, false, s.c.errorf("get", err)
	}
	return v, ok, nil
}

// Put sets the value of uk in k's map.
func (s *Map[UK, UV]) Put(k Key, uk UK, uv UV) error {
	if err := s.c.check(k); err != nil {
		return err
	}
	if err := writeEntry(&s.c, s.entryKey(k, uk), s.uvCodec, uv); err != nil {
		return s.c.errorf("put", err)
	}
	return nil
}

// Remove removes uk from k's map.
func (s *Map[UK, UV]) Remove(k Key, uk UK) error {
	if err := s.c.check(k); err != nil {
		return err
	}
	if err := s.c.b.db.Delete(s.entryKey(k, uk), pebble.NoSync); err != nil {
		return s.c.errorf("remove", err)
	}
	return nil
}

// Contains reports whether k's map has uk. With OnReadAndWrite it refreshes
// the entry's timestamp, as a Get.
func (s *Map[UK, UV]) Contains(k Key, uk UK) (bool, error) {
	if err := s.c.check(k); err != nil {
		return false, err
	}
	_, ok, err := s.c.readEntry(s.entryKey(k, uk), true)
	if err != nil {
		return false, s.c.errorf("contains", err)
	}
	return ok, nil
}

// All calls fn with each entry of k's map, in byte order of the encoded
// user keys. It reads a snapshot taken when it starts, so fn may modify the
// map. With OnReadAndWrite the entries it passes get new timestamps. An
// error returned by fn stops the iteration and is returned as is.
func (s *Map[UK, UV]) All(k Key, fn func(uk UK, uv UV) error) error {
	if err := s.c.check(k); err != nil {
		return err
	}
	return s.entries(k, true, func(rest, payload []byte) error {
		uk, err := s.ukCodec.Decode(rest)
		if err != nil {
			return s.c.errorf("iterate", decodeError(err))
		}
		uv, err := s.uvCodec.Decode(payload)
		if err != nil {
			return s.c.errorf("iterate", decodeError(err))
		}
		return fn(uk, uv)
	})
}

// errStop stops an iteration early without error.
var errStop = errors.New("state: stop iteration")

// IsEmpty reports whether k's map has no entries.
func (s *Map[UK, UV]) IsEmpty(k Key) (bool, error) {
	if err := s.c.check(k); err != nil {
		return false, err
	}
	empty := true
	err := s.entries(k, false, func(_, _ []byte) error {
		empty = false
		return errStop
	})
	if err != nil && err != errStop {
		return false, err
	}
	return empty, nil
}

// Clear removes every entry of k's map.
func (s *Map[UK, UV]) Clear(k Key) error {
	if err := s.c.check(k); err != nil {
		return err
	}
	prefix := bytes.Clone(s.c.keys.entry(k))
	it, err := s.c.b.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixSuccessor(prefix)})
	if err != nil {
		return s.c.errorf("clear", err)
	}
	batch := s.c.b.db.NewBatch()
	defer batch.Close()
	for ok := it.First(); ok; ok = it.Next() {
		if err := batch.Delete(it.Key(), nil); err != nil {
			_ = it.Close()
			return s.c.errorf("clear", err)
		}
	}
	if err := it.Close(); err != nil {
		return s.c.errorf("clear", err)
	}
	if err := batch.Commit(pebble.NoSync); err != nil {
		return s.c.errorf("clear", err)
	}
	return nil
}

// ForEach calls fn with every entry of every key's map, in key-group order,
// then key order, then user-key order, as Value.ForEach.
func (s *Map[UK, UV]) ForEach(fn func(k Key, uk UK, uv UV) error) error {
	return s.c.scanEntries(func(k Key, rest, payload []byte) error {
		uk, err := s.ukCodec.Decode(rest)
		if err != nil {
			return s.c.errorf("iterate", decodeError(err))
		}
		uv, err := s.uvCodec.Decode(payload)
		if err != nil {
			return s.c.errorf("iterate", decodeError(err))
		}
		return fn(k, uk, uv)
	})
}

// entries calls fn with the encoded user key and the payload of each
// visible entry of k's map, applying the TTL: expired entries are deleted
// (and passed on only with ReturnExpiredIfNotCleanedUp), and, when refresh
// and the TTL updates on read, live ones are rewritten with new timestamps.
func (s *Map[UK, UV]) entries(k Key, refresh bool, fn func(rest, payload []byte) error) error {
	prefix := bytes.Clone(s.c.keys.entry(k))
	it, err := s.c.b.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixSuccessor(prefix)})
	if err != nil {
		return s.c.errorf("iterate", err)
	}
	defer it.Close()
	p := s.c.ttl
	refresh = refresh && p.enabled && p.updateOnRead
	now := s.c.b.now()
	var wbuf []byte
	for ok := it.First(); ok; ok = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			return s.c.errorf("iterate", err)
		}
		ts, hasTS, payload, err := parseHeader(v)
		if err != nil {
			return s.c.errorf("iterate", err)
		}
		switch {
		case p.expired(ts, hasTS, now):
			if err := s.c.b.db.Delete(it.Key(), pebble.NoSync); err != nil {
				return s.c.errorf("delete expired entry", err)
			}
			if !p.returnExpired {
				continue
			}
		case refresh:
			wbuf = append(appendHeader(wbuf[:0], true, now), payload...)
			if err := s.c.b.db.Set(it.Key(), wbuf, pebble.NoSync); err != nil {
				return s.c.errorf("refresh entry", err)
			}
		}
		if err := fn(it.Key()[len(prefix):], payload); err != nil {
			return err
		}
	}
	if err := it.Error(); err != nil {
		return s.c.errorf("iterate", err)
	}
	return nil
}
