package state

import "fmt"

// Reducing is a keyed state that folds the values added for a key into one
// with a reduce function, as Flink's ReducingState.
type Reducing[T any] struct {
	c      stateCore
	codec  Codec[T]
	reduce func(a, b T) (T, error)
}

// NewReducing registers the reducing state name in b. reduce combines the
// current value a with an added value b.
func NewReducing[T any](b *Backend, name string, codec Codec[T], reduce func(a, b T) (T, error), opts ...StateOption) (*Reducing[T], error) {
	if codec == nil || reduce == nil {
		return nil, fmt.Errorf("%w: reducing state %q: nil codec or reduce function", ErrInvalidState, name)
	}
	c, err := newCore(b, name, kindReducing, opts)
	if err != nil {
		return nil, err
	}
	return &Reducing[T]{c: c, codec: codec, reduce: reduce}, nil
}

// Name returns the state's name.
func (s *Reducing[T]) Name() string { return s.c.keys.name }

// Add folds v into k's value: the value becomes reduce(value, v), or v when
// k has none. An error of reduce is returned as is and changes nothing.
func (s *Reducing[T]) Add(k Key, v T) error {
	if err := s.c.check(k); err != nil {
		return err
	}
	key := s.c.keys.entry(k)
	cur, ok, err := readDecoded(&s.c, key, s.codec, false)
	if err != nil {
		return s.c.errorf("add", err)
	}
	if ok {
		if v, err = s.reduce(cur, v); err != nil {
			return err
		}
	}
	if err := writeEntry(&s.c, key, s.codec, v); err != nil {
		return s.c.errorf("add", err)
	}
	return nil
}

// Get returns k's value, and false when it has none.
func (s *Reducing[T]) Get(k Key) (T, bool, error) {
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

// Clear removes k's value.
func (s *Reducing[T]) Clear(k Key) error { return s.c.clear(k) }

// ForEach calls fn with every key that has a value, and the value, as
// Value.ForEach.
func (s *Reducing[T]) ForEach(fn func(k Key, v T) error) error {
	return s.c.scanEntries(func(k Key, _, payload []byte) error {
		v, err := s.codec.Decode(payload)
		if err != nil {
			return s.c.errorf("iterate", decodeError(err))
		}
		return fn(k, v)
	})
}
