package state

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// List is a keyed state holding a list of values per key, as Flink's
// ListState. Adding is a Pebble merge (no read), so Add and AddAll cost the
// same whatever the list's length; Get reads the whole list. With a TTL each
// element has its own timestamp.
type List[T any] struct {
	c     stateCore
	codec Codec[T]
}

// NewList registers the list state name in b.
func NewList[T any](b *Backend, name string, codec Codec[T], opts ...StateOption) (*List[T], error) {
	if codec == nil {
		return nil, fmt.Errorf("%w: list state %q: nil codec", ErrInvalidState, name)
	}
	c, err := newCore(b, name, kindList, opts)
	if err != nil {
		return nil, err
	}
	return &List[T]{c: c, codec: codec}, nil
}

// Name returns the state's name.
func (s *List[T]) Name() string { return s.c.keys.name }

// Get returns k's elements in the order they were added; nil when k has
// none.
func (s *List[T]) Get(k Key) ([]T, error) {
	if err := s.c.check(k); err != nil {
		return nil, err
	}
	key := s.c.keys.entry(k)
	raw, ok, err := s.c.getRaw(key)
	if err != nil || !ok {
		return nil, s.wrap("get", err)
	}
	var out []T
	kept, changed, err := filterList(s.c.wbuf[:0], raw, s.c.ttl, s.c.b.now(), true, func(payload []byte, expired bool) error {
		if expired && !s.c.ttl.returnExpired {
			return nil
		}
		v, err := s.codec.Decode(payload)
		if err != nil {
			return decodeError(err)
		}
		out = append(out, v)
		return nil
	})
	s.c.wbuf = kept
	if err != nil {
		return nil, s.c.errorf("get", err)
	}
	if changed {
		if err := s.rewrite(key, kept); err != nil {
			return nil, s.c.errorf("get", err)
		}
	}
	return out, nil
}

// Add appends v to k's list.
func (s *List[T]) Add(k Key, v T) error {
	if err := s.c.check(k); err != nil {
		return err
	}
	s.c.wbuf = s.appendElement(s.c.wbuf[:0], s.c.b.now(), v)
	return s.wrap("add", s.c.b.db.Merge(s.c.keys.entry(k), s.c.wbuf, pebble.NoSync))
}

// AddAll appends vs to k's list, in order. An empty vs changes nothing.
func (s *List[T]) AddAll(k Key, vs []T) error {
	if err := s.c.check(k); err != nil || len(vs) == 0 {
		return err
	}
	s.c.wbuf = s.appendElements(s.c.wbuf[:0], vs)
	return s.wrap("add", s.c.b.db.Merge(s.c.keys.entry(k), s.c.wbuf, pebble.NoSync))
}

// Update replaces k's list with vs; an empty vs clears it.
func (s *List[T]) Update(k Key, vs []T) error {
	if err := s.c.check(k); err != nil {
		return err
	}
	if len(vs) == 0 {
		return s.c.clear(k)
	}
	s.c.wbuf = s.appendElements(s.c.wbuf[:0], vs)
	return s.wrap("update", s.c.b.db.Set(s.c.keys.entry(k), s.c.wbuf, pebble.NoSync))
}

// Clear removes k's list.
func (s *List[T]) Clear(k Key) error { return s.c.clear(k) }

// ForEach calls fn with every key that has a non-empty list, and the list,
// as Value.ForEach: expired elements are removed, and skipped unless the TTL
// returns them.
func (s *List[T]) ForEach(fn func(k Key, vs []T) error) error {
	now := s.c.b.now()
	var kept []byte
	return s.c.scan(func(pk parsedKey, rawKey, raw []byte) error {
		var vs []T
		var changed bool
		var err error
		kept, changed, err = filterList(kept[:0], raw, s.c.ttl, now, false, func(payload []byte, expired bool) error {
			if expired && !s.c.ttl.returnExpired {
				return nil
			}
			v, err := s.codec.Decode(payload)
			if err != nil {
				return decodeError(err)
			}
			vs = append(vs, v)
			return nil
		})
		if err != nil {
			return s.c.errorf("iterate", err)
		}
		if changed {
			if err := s.rewrite(rawKey, kept); err != nil {
				return s.c.errorf("iterate", err)
			}
		}
		if len(vs) == 0 {
			return nil
		}
		return fn(Key{Group: pk.group, Bytes: append([]byte(nil), pk.key...)}, vs)
	})
}

func (s *List[T]) appendElement(dst []byte, now int64, v T) []byte {
	return appendListElement(dst, s.c.ttl.enabled, now, func(d []byte) []byte { return s.codec.Encode(d, v) })
}

func (s *List[T]) appendElements(dst []byte, vs []T) []byte {
	now := s.c.b.now()
	for _, v := range vs {
		dst = s.appendElement(dst, now, v)
	}
	return dst
}

// rewrite stores the list value kept at key, or deletes key when kept is
// empty.
func (s *List[T]) rewrite(key, kept []byte) error {
	if len(kept) == 0 {
		return s.c.b.db.Delete(key, pebble.NoSync)
	}
	return s.c.b.db.Set(key, kept, pebble.NoSync)
}

func (s *List[T]) wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	return s.c.errorf(op, err)
}

// filterList appends to dst the elements of the list value raw that have not
// expired at now under p, with their timestamps set to now when refresh and
// p updates on read. It calls visit (when not nil) with each element's
// payload and whether it expired. changed reports whether dst differs from
// raw (an element expired or was refreshed).
func filterList(dst, raw []byte, p ttlPolicy, now int64, refresh bool, visit func(payload []byte, expired bool) error) (kept []byte, changed bool, err error) {
	refresh = refresh && p.enabled && p.updateOnRead
	err = listElements(raw, func(framed, elem []byte) error {
		ts, hasTS, payload, err := parseHeader(elem)
		if err != nil {
			return err
		}
		expired := p.expired(ts, hasTS, now)
		switch {
		case expired:
			changed = true
		case refresh:
			changed = true
			dst = appendListElement(dst, true, now, func(d []byte) []byte { return append(d, payload...) })
		default:
			dst = append(dst, framed...)
		}
		if visit != nil {
			return visit(payload, expired)
		}
		return nil
	})
	return dst, changed, err
}
