package state

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// stateCore is what every kind of state shares: its backend, the encoding
// of its keys, its TTL and scratch buffers (so a state is used by the
// backend's goroutine only).
type stateCore struct {
	b    *Backend
	kind stateKind
	keys stateKeys
	ttl  ttlPolicy
	rbuf []byte // values read
	wbuf []byte // values written
}

func newCore(b *Backend, name string, kind stateKind, opts []StateOption) (stateCore, error) {
	if b == nil {
		return stateCore{}, fmt.Errorf("%w: %s state %q: nil backend", ErrInvalidState, kind, name)
	}
	ttl, err := b.register(name, kind, opts)
	if err != nil {
		return stateCore{}, err
	}
	return stateCore{b: b, kind: kind, keys: newStateKeys(name), ttl: ttl}, nil
}

// check returns ErrClosed after Close and ErrKeyGroup when k is not in the
// backend's key groups.
func (c *stateCore) check(k Key) error {
	if err := c.b.checkOpen(); err != nil {
		return err
	}
	if r := c.b.opts.KeyGroups; !r.Contains(k.Group) {
		return fmt.Errorf("%w: %s state %q (operator %q subtask %d): key group %d is outside %v",
			ErrKeyGroup, c.kind, c.keys.name, c.b.opts.OperatorUID, c.b.opts.Subtask, k.Group, r)
	}
	return nil
}

// errorf wraps err, which op met, with the state and the backend.
func (c *stateCore) errorf(op string, err error) error {
	if errors.Is(err, ErrClosed) {
		return err
	}
	return fmt.Errorf("state: %s state %q (operator %q subtask %d): %s: %w",
		c.kind, c.keys.name, c.b.opts.OperatorUID, c.b.opts.Subtask, op, err)
}

// decodeError marks a codec's error as corruption.
func decodeError(err error) error { return fmt.Errorf("%w: decode: %v", ErrCorrupt, err) }

// getRaw returns a copy (in c.rbuf, valid until the next read) of the value
// stored at key.
func (c *stateCore) getRaw(key []byte) ([]byte, bool, error) {
	v, closer, err := c.b.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	c.rbuf = append(c.rbuf[:0], v...)
	_ = closer.Close()
	return c.rbuf, true, nil
}

// readEntry reads the value-like entry (value, reducing and aggregating
// state, one map entry) at key, applying the TTL: an expired entry is
// deleted and returned only with ReturnExpiredIfNotCleanedUp; a live one is
// rewritten with a new timestamp when refresh and the TTL updates on read.
// The payload is valid until the next read.
func (c *stateCore) readEntry(key []byte, refresh bool) ([]byte, bool, error) {
	raw, ok, err := c.getRaw(key)
	if err != nil || !ok {
		return nil, false, err
	}
	ts, hasTS, payload, err := parseHeader(raw)
	if err != nil {
		return nil, false, err
	}
	if !c.ttl.enabled {
		return payload, true, nil
	}
	now := c.b.now()
	if c.ttl.expired(ts, hasTS, now) {
		if err := c.b.db.Delete(key, pebble.NoSync); err != nil {
			return nil, false, err
		}
		return payload, c.ttl.returnExpired, nil
	}
	if refresh && c.ttl.updateOnRead {
		c.wbuf = append(appendHeader(c.wbuf[:0], true, now), payload...)
		if err := c.b.db.Set(key, c.wbuf, pebble.NoSync); err != nil {
			return nil, false, err
		}
	}
	return payload, true, nil
}

// writeEntry stores v at key with the header of the state's TTL.
func writeEntry[T any](c *stateCore, key []byte, codec Codec[T], v T) error {
	c.wbuf = codec.Encode(appendHeader(c.wbuf[:0], c.ttl.enabled, c.b.now()), v)
	return c.b.db.Set(key, c.wbuf, pebble.NoSync)
}

// readDecoded reads and decodes the value-like entry at key.
func readDecoded[T any](c *stateCore, key []byte, codec Codec[T], refresh bool) (T, bool, error) {
	var zero T
	payload, ok, err := c.readEntry(key, refresh)
	if err != nil || !ok {
		return zero, false, err
	}
	v, err := codec.Decode(payload)
	if err != nil {
		return zero, false, decodeError(err)
	}
	return v, true, nil
}

// scan calls fn with every entry of the state in the backend's key groups,
// in key-group order and, within a key group, in the order of the encoded
// keys (uvarint length, then bytes: shorter keys first).
// The iteration reads a snapshot of the state taken when it starts; fn may
// write to the state. fn's arguments are valid until it returns. An error
// of fn stops the scan and is returned as is.
func (c *stateCore) scan(fn func(pk parsedKey, rawKey, value []byte) error) error {
	if err := c.b.checkOpen(); err != nil {
		return err
	}
	err := scanState(c.b.db, c.b.opts.KeyGroups, c.keys.nameSeg, func(key, value []byte) error {
		pk, err := parseKey(key)
		if err != nil {
			return &scanError{err}
		}
		return fn(pk, key, value)
	})
	if se, ok := err.(*scanError); ok {
		return c.errorf("iterate", se.err)
	}
	return err
}

// scanError marks the errors of scanState itself, as opposed to those its
// callback returns.
type scanError struct{ err error }

func (e *scanError) Error() string { return e.err.Error() }
func (e *scanError) Unwrap() error { return e.err }

// scanState calls fn with every entry of the state whose encoded name is
// nameSeg in the key groups r of db, in key-group order, then key order.
// Errors of the iteration are returned as *scanError; errors of fn as they
// are.
func scanState(db pebble.Reader, r KeyGroupRange, nameSeg []byte, fn func(key, value []byte) error) error {
	lower, upper := groupSpan(r)
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return &scanError{err}
	}
	defer it.Close()
	prefix := make([]byte, 0, groupPrefixLen+len(nameSeg))
	for g := r.Start; g <= r.End; g++ {
		prefix = append(appendGroup(prefix[:0], g), nameSeg...)
		for ok := it.SeekGE(prefix); ok && bytes.HasPrefix(it.Key(), prefix); ok = it.Next() {
			v, err := it.ValueAndErr()
			if err != nil {
				return &scanError{err}
			}
			if err := fn(it.Key(), v); err != nil {
				return err
			}
		}
		if err := it.Error(); err != nil {
			return &scanError{err}
		}
		if !it.Valid() {
			break // no entries after this key group
		}
		if next := int(it.Key()[0])<<8 | int(it.Key()[1]); next > g+1 {
			g = next - 1 // skip key groups without entries of any state
		}
	}
	return nil
}

// scanEntries is scan for value-like states: it applies the TTL (expired
// entries are deleted, and passed on only with ReturnExpiredIfNotCleanedUp;
// timestamps are not refreshed) and passes fn the key and the payload.
func (c *stateCore) scanEntries(fn func(k Key, rest, payload []byte) error) error {
	now := c.b.now()
	return c.scan(func(pk parsedKey, rawKey, v []byte) error {
		ts, hasTS, payload, err := parseHeader(v)
		if err != nil {
			return c.errorf("iterate", err)
		}
		if c.ttl.expired(ts, hasTS, now) {
			if err := c.b.db.Delete(rawKey, pebble.NoSync); err != nil {
				return c.errorf("delete expired entry", err)
			}
			if !c.ttl.returnExpired {
				return nil
			}
		}
		return fn(Key{Group: pk.group, Bytes: bytes.Clone(pk.key)}, pk.rest, payload)
	})
}

// clear deletes the entry at k.
func (c *stateCore) clear(k Key) error {
	if err := c.check(k); err != nil {
		return err
	}
	if err := c.b.db.Delete(c.keys.entry(k), pebble.NoSync); err != nil {
		return c.errorf("clear", err)
	}
	return nil
}
