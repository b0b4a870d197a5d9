package watermark

import "fmt"

// Multiplexer combines the watermarks and idleness of the splits a source
// subtask reads into the subtask's one output, as Flink's
// WatermarkOutputMultiplexer: the combined watermark is the minimum over the
// splits that are not idle, it never goes back, and it is idle when every
// split is. So one fast split does not make another split's rows late.
//
// Updates are immediate (Watermark, MarkIdle, MarkActive: they may return
// something to send) or deferred (Defer*: they only record, and
// OnPeriodicEmit combines them), as Flink's immediate and deferred outputs.
// Unlike Flink's, whose output stays idle until the next combined watermark,
// the combined output turns Active as soon as one split is no longer idle.
type Multiplexer struct {
	splits   map[string]*splitState
	order    []*splitState // registration order, for a deterministic scan
	combined Watermark
	idle     bool // the status last returned
}

type splitState struct {
	id        string
	watermark Watermark
	idle      bool
}

// NewMultiplexer returns a multiplexer without splits.
func NewMultiplexer() *Multiplexer {
	return &Multiplexer{splits: map[string]*splitState{}, combined: MinWatermark}
}

// Register adds a split, active and without a watermark. Registering an id
// twice is an error.
func (m *Multiplexer) Register(id string) error {
	if _, ok := m.splits[id]; ok {
		return fmt.Errorf("watermark: split %q is already registered", id)
	}
	s := &splitState{id: id, watermark: MinWatermark}
	m.splits[id] = s
	m.order = append(m.order, s)
	return nil
}

// Unregister removes a split (it finished) and says whether it was
// registered. As Flink's, it does not recompute the combined watermark: the
// next update or periodic emit does.
func (m *Multiplexer) Unregister(id string) bool {
	s, ok := m.splits[id]
	if !ok {
		return false
	}
	delete(m.splits, id)
	for i, o := range m.order {
		if o == s {
			m.order = append(m.order[:i], m.order[i+1:]...)
			break
		}
	}
	return true
}

// Len is the number of registered splits.
func (m *Multiplexer) Len() int { return len(m.order) }

// Combined is the combined watermark returned so far.
func (m *Multiplexer) Combined() Watermark { return m.combined }

// Idle says whether the combined output is idle.
func (m *Multiplexer) Idle() bool { return m.idle }

// Watermark records split id's watermark (it also ends the split's
// idleness) and returns the combined update if that watermark is above the
// combined one. An unknown id is an error.
func (m *Multiplexer) Watermark(id string, w Watermark) (Emission, error) {
	s, err := m.split(id)
	if err != nil {
		return Emission{}, err
	}
	if s.setWatermark(w) && w > m.combined {
		return m.update(), nil
	}
	return Emission{}, nil
}

// MarkIdle marks split id idle and returns the combined update (leaving it
// out may advance the minimum, or make the output idle).
func (m *Multiplexer) MarkIdle(id string) (Emission, error) {
	return m.setIdle(id, true, true)
}

// MarkActive marks split id active again and returns the combined update.
func (m *Multiplexer) MarkActive(id string) (Emission, error) {
	return m.setIdle(id, false, true)
}

// DeferWatermark records split id's watermark for the next OnPeriodicEmit.
func (m *Multiplexer) DeferWatermark(id string, w Watermark) error {
	s, err := m.split(id)
	if err == nil {
		s.setWatermark(w)
	}
	return err
}

// DeferIdle marks split id idle for the next OnPeriodicEmit.
func (m *Multiplexer) DeferIdle(id string) error {
	_, err := m.setIdle(id, true, false)
	return err
}

// DeferActive marks split id active for the next OnPeriodicEmit.
func (m *Multiplexer) DeferActive(id string) error {
	_, err := m.setIdle(id, false, false)
	return err
}

// Apply records what split id's generator returned (Active, watermark,
// Idle) as deferred updates, for the next OnPeriodicEmit.
func (m *Multiplexer) Apply(id string, e Emission) error {
	s, err := m.split(id)
	if err != nil {
		return err
	}
	if e.BecameActive {
		s.idle = false
	}
	if e.HasWatermark {
		s.setWatermark(e.Watermark)
	}
	if e.BecameIdle {
		s.idle = true
	}
	return nil
}

// OnPeriodicEmit combines the deferred updates and returns what to send.
func (m *Multiplexer) OnPeriodicEmit() Emission { return m.update() }

func (m *Multiplexer) split(id string) (*splitState, error) {
	s, ok := m.splits[id]
	if !ok {
		return nil, fmt.Errorf("watermark: no split %q is registered", id)
	}
	return s, nil
}

func (m *Multiplexer) setIdle(id string, idle, immediate bool) (Emission, error) {
	s, err := m.split(id)
	if err != nil {
		return Emission{}, err
	}
	s.idle = idle
	if !immediate {
		return Emission{}, nil
	}
	return m.update(), nil
}

// setWatermark is Flink's PartialWatermark.setWatermark: it ends idleness
// and says whether the watermark grew.
func (s *splitState) setWatermark(w Watermark) bool {
	s.idle = false
	if w > s.watermark {
		s.watermark = w
		return true
	}
	return false
}

// update is Flink's CombinedWatermarkStatus.updateCombinedWatermark, with
// the status changes of the output.
func (m *Multiplexer) update() Emission {
	if len(m.order) == 0 {
		return Emission{} // no split: no minimum, never MaxWatermark
	}
	allIdle, min := true, MaxWatermark
	for _, s := range m.order {
		if !s.idle {
			allIdle = false
			if s.watermark < min {
				min = s.watermark
			}
		}
	}
	var e Emission
	switch {
	case allIdle:
		if !m.idle {
			m.idle, e.BecameIdle = true, true
		}
	default:
		if m.idle {
			m.idle, e.BecameActive = false, true
		}
		if min > m.combined {
			m.combined = min
			e.HasWatermark, e.Watermark = true, min
		}
	}
	return e
}
