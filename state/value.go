package state

import "fmt"

// Value is a keyed state holding one value per key, as Flink's ValueState.
type Value[T any] struct {
	c     stateCore
	codec Codec[T]
}

// NewValue registers the value state name in b. Registering a name again
// with the same kind and TTL returns another handle on the same state;
// with another kind or TTL it fails with ErrStateConflict.
func NewValue[T any](b *Backend, name string, codec Codec[T], opts ...StateOption) (*Value[T], error) {
	if codec == nil {
		return nil, fmt.Errorf("%w: value state %q: nil codec", ErrInvalidState, name)
	}
	c, err := newCore(b, name, kindValue, opts)
	if err != nil {
		return nil, err
	}
	return &Value[T]{c: c, codec: codec}, nil
}

// Name returns the state's name.
func (s *Value[T]) Name() string { return s.c.keys.name }

// Get returns k's value, and false when it has none (or it expired).
func (s *Value[T]) Get(k Key) (T, bool, error) {
	if err := s.c.check(k); err != nil {
		var zero T
		return zero, false, err
	}
	v, ok, err := readDecoded(&s.c, s.c.keys.entry(k), s.codec, true)
	if err != nil {
		return v, false, s.c.errorf("get", err)
	}
	return v, ok, nil
}

// Put sets k's value.
func (s *Value[T]) Put(k Key, v T) error {
	if err := s.c.check(k); err != nil {
		return err
	}
	if err := writeEntry(&s.c, s.c.keys.entry(k), s.codec, v); err != nil {
		return s.c.errorf("put", err)
	}
	return nil
}

// Clear removes k's value.
func (s *Value[T]) Clear(k Key) error { return s.c.clear(k) }

// ForEach calls fn with every key that has a value, and the value, over
// all the backend's key groups in key-group order (within a key group,
// shorter keys first, then in byte order); for instance to emit every
// result at the end of a bounded input. It reads a snapshot taken when it starts, so fn may write to the
// state. Expired values are skipped (and removed) unless the TTL returns
// them; timestamps are not refreshed. An error returned by fn stops the
// iteration and is returned as is.
func (s *Value[T]) ForEach(fn func(k Key, v T) error) error {
	return s.c.scanEntries(func(k Key, _, payload []byte) error {
		v, err := s.codec.Decode(payload)
		if err != nil {
			return s.c.errorf("iterate", decodeError(err))
		}
		return fn(k, v)
	})
}
