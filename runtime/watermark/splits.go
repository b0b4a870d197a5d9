package watermark

import "fmt"

// Splits runs one generator per split that a source subtask reads and
// combines them through a Multiplexer, as Flink's SourceOperator does with
// per-split outputs: a row's generator update is applied at once (so a
// split coming back from idleness makes the output Active before its row),
// and periodic updates are deferred and combined on OnPeriodicEmit.
//
// With no split registered nothing is ever sent: the operator decides
// whether a subtask without splits is idle (Flink marks it idle).
type Splits struct {
	newGenerator func() (Generator, error)
	generators   map[string]Generator
	order        []string
	mux          *Multiplexer
}

// NewSplits returns per-split watermarks whose generators newGenerator
// makes (for example a BoundedOutOfOrderness wrapped in WithIdleness).
func NewSplits(newGenerator func() (Generator, error)) *Splits {
	return &Splits{newGenerator: newGenerator, generators: map[string]Generator{}, mux: NewMultiplexer()}
}

// Add registers split id with a fresh generator (watermarks are not
// checkpointed: a restored split starts again from MinWatermark, as in
// Flink). Adding an id twice is an error.
func (s *Splits) Add(id string) error {
	if _, ok := s.generators[id]; ok {
		return fmt.Errorf("watermark: split %q is already registered", id)
	}
	g, err := s.newGenerator()
	if err != nil {
		return fmt.Errorf("watermark: generator for split %q: %w", id, err)
	}
	if err := s.mux.Register(id); err != nil {
		return err
	}
	s.generators[id] = g
	s.order = append(s.order, id)
	return nil
}

// Remove drops a finished split and says whether it was registered.
func (s *Splits) Remove(id string) bool {
	if _, ok := s.generators[id]; !ok {
		return false
	}
	delete(s.generators, id)
	for i, o := range s.order {
		if o == id {
			s.order = append(s.order[:i], s.order[i+1:]...)
			break
		}
	}
	return s.mux.Unregister(id)
}

// OnEvent accounts for a row of split id with event time ts (for a batch,
// its greatest timestamp) and returns what to send before the row.
func (s *Splits) OnEvent(id string, ts int64) (Emission, error) {
	g, ok := s.generators[id]
	if !ok {
		return Emission{}, fmt.Errorf("watermark: no split %q is registered", id)
	}
	e := g.OnEvent(ts)
	var out Emission
	if e.BecameActive {
		m, err := s.mux.MarkActive(id)
		if err != nil {
			return Emission{}, err
		}
		out = out.then(m)
	}
	if e.HasWatermark {
		m, err := s.mux.Watermark(id, e.Watermark)
		if err != nil {
			return Emission{}, err
		}
		out = out.then(m)
	}
	if e.BecameIdle {
		m, err := s.mux.MarkIdle(id)
		if err != nil {
			return Emission{}, err
		}
		out = out.then(m)
	}
	return out, nil
}

// OnPeriodicEmit runs every split's periodic emit and returns the combined
// update; call it every pipeline.auto-watermark-interval.
func (s *Splits) OnPeriodicEmit() Emission {
	for _, id := range s.order {
		// Every id in order is registered in the multiplexer.
		_ = s.mux.Apply(id, s.generators[id].OnPeriodicEmit())
	}
	return s.mux.OnPeriodicEmit()
}

// Watermark is the combined watermark sent so far.
func (s *Splits) Watermark() Watermark { return s.mux.Combined() }

// Idle says whether the combined output is idle.
func (s *Splits) Idle() bool { return s.mux.Idle() }

// Len is the number of splits registered.
func (s *Splits) Len() int { return len(s.order) }
