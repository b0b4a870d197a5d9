package state

import "fmt"

// AggregateFunction folds inputs into an accumulator and computes a result
// from it, as Flink's AggregateFunction.
type AggregateFunction[IN, ACC, OUT any] struct {
	// CreateAccumulator returns the accumulator of a key without one.
	CreateAccumulator func() ACC
	// Add folds in into acc and returns the new accumulator.
	Add func(in IN, acc ACC) (ACC, error)
	// GetResult computes the result of acc.
	GetResult func(acc ACC) (OUT, error)
}

// Aggregating is a keyed state holding one accumulator per key, as Flink's
// AggregatingState.
type Aggregating[IN, ACC, OUT any] struct {
	c     stateCore
	codec Codec[ACC]
	fn    AggregateFunction[IN, ACC, OUT]
}

// NewAggregating registers the aggregating state name in b; accCodec
// stores the accumulators.
func NewAggregating[IN, ACC, OUT any](b *Backend, name string, accCodec Codec[ACC], fn AggregateFunction[IN, ACC, OUT], opts ...StateOption) (*Aggregating[IN, ACC, OUT], error) {
	if accCodec == nil || fn.CreateAccumulator == nil || fn.Add == nil || fn.GetResult == nil {
		return nil, fmt.Errorf("%w: aggregating state %q: nil codec or aggregate function", ErrInvalidState, name)
	}
	c, err := newCore(b, name, kindAggregating, opts)
	if err != nil {
		return nil, err
	}
	return &Aggregating[IN, ACC, OUT]{c: c, codec: accCodec, fn: fn}, nil
}

// Name returns the state's name.
func (s *Aggregating[IN, ACC, OUT]) Name() string { return s.c.keys.name }

// Add folds in into k's accumulator (a new one when k has none). An error
// of the function is returned as is and changes nothing.
func (s *Aggregating[IN, ACC, OUT]) Add(k Key, in IN) error {
	if err := s.c.check(k); err != nil {
		return err
	}
	key := s.c.keys.entry(k)
	acc, ok, err := readDecoded(&s.c, key, s.codec, false)
	if err != nil {
		return s.c.errorf("add", err)
	}
	if !ok {
		acc = s.fn.CreateAccumulator()
	}
	if acc, err = s.fn.Add(in, acc); err != nil {
		return err
	}
	if err := writeEntry(&s.c, key, s.codec, acc); err != nil {
		return s.c.errorf("add", err)
	}
	return nil
}

// Get returns the result of k's accumulator, and false when k has none.
func (s *Aggregating[IN, ACC, OUT]) Get(k Key) (OUT, bool, error) {
	var zero OUT
	if err := s.c.check(k); err != nil {
		return zero, false, err
	}
	acc, ok, err := readDecoded(&s.c, s.c.keys.entry(k), s.codec, true)
	if err != nil {
		return zero, false, s.c.errorf("get", err)
	}
	if !ok {
		return zero, false, nil
	}
	out, err := s.fn.GetResult(acc)
	if err != nil {
		return zero, false, err
	}
	return out, true, nil
}

// Clear removes k's accumulator.
func (s *Aggregating[IN, ACC, OUT]) Clear(k Key) error { return s.c.clear(k) }

// ForEach calls fn with every key that has an accumulator, and its result,
// as Value.ForEach. An error of GetResult stops the iteration and is
// returned as is.
func (s *Aggregating[IN, ACC, OUT]) ForEach(fn func(k Key, out OUT) error) error {
	return s.c.scanEntries(func(k Key, _, payload []byte) error {
		acc, err := s.codec.Decode(payload)
		if err != nil {
			return s.c.errorf("iterate", decodeError(err))
		}
		out, err := s.fn.GetResult(acc)
		if err != nil {
			return err
		}
		return fn(k, out)
	})
}
