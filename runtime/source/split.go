package source

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
)

// SplitCount is the number of ranges of an in-memory table or bounded
// generated rows, and of lanes of unbounded generated rows: fixed, so that
// splits do not depend on the parallelism; as many as the default number of
// key groups.
const SplitCount = 128

// RestoreMap indexes the union of snapshots by split, for the readers of
// every connector. A split listed twice
// with different states is an error (each split has one owner); nil stays
// nil, a fresh start.
func RestoreMap(states []SplitState) (map[string]SplitState, error) {
	if states == nil {
		return nil, nil
	}
	m := make(map[string]SplitState, len(states))
	var errs []error
	for _, s := range states {
		if s.Split == "" {
			//lint:ignore ST1005 the message starts with the name of the field or method at fault
			errs = append(errs, errors.New("Restore has a split state without a split id"))
			continue
		}
		if old, ok := m[s.Split]; ok && !reflect.DeepEqual(normal(old), normal(s)) {
			//lint:ignore ST1005 the message starts with the name of the field or method at fault
			errs = append(errs, fmt.Errorf("Restore has split %q twice, at different positions", s.Split))
			continue
		}
		m[s.Split] = s
	}
	return m, errors.Join(errs...)
}

// normal makes equal states compare equal (nil and empty offsets, any offset
// of a done split).
func normal(s SplitState) SplitState {
	if s.Done || len(s.Offset) == 0 {
		s.Offset = nil
	}
	return s
}

// BadOffset returns an ErrBadOffset error naming the split.
func BadOffset(split, format string, args ...any) error {
	return fmt.Errorf("%w: split %q: %s", ErrBadOffset, split, fmt.Sprintf(format, args...))
}

// DecodeOffset decodes a split's JSON offset into v, which must be a
// pointer to a struct; unknown fields and trailing data are errors.
func DecodeOffset(split string, offset []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(offset))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return BadOffset(split, "offset %q does not decode: %v", offset, err)
	}
	if dec.More() {
		return BadOffset(split, "offset %q has data after its JSON object", offset)
	}
	return nil
}

// EncodeOffset encodes an offset struct (which always marshals).
func EncodeOffset(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("source: encoding offset %#v: %v", v, err))
	}
	return b
}

// SeqOffset is the offset of a range or lane: the rows of it already
// returned.
type SeqOffset struct {
	Next int64 `json:"next"`
}

// rowRange is a range [start, end) of rows, read up to pos.
type rowRange struct {
	id         string
	start, end int64
	pos        int64
}

// RowRanges are the ranges of n rows one subtask owns, in order: the n rows
// cut into SplitCount ranges, range k = [k*n/SplitCount, (k+1)*n/SplitCount),
// going to subtask k*p/SplitCount.
type RowRanges struct {
	r     []rowRange
	cur   int   // first range that may have rows left
	Owned int64 // rows in the owned ranges
}

func SplitRows(n int64, cfg Config, restore map[string]SplitState) (*RowRanges, error) {
	rs := &RowRanges{}
	p := int64(cfg.Parallelism)
	for k := range int64(SplitCount) {
		start, end := RangeBound(n, k), RangeBound(n, k+1)
		if start == end || k*p/SplitCount != int64(cfg.Subtask) {
			continue
		}
		r := rowRange{id: fmt.Sprintf("range-%d-%d", start, end), start: start, end: end, pos: start}
		if st, ok := restore[r.id]; ok {
			switch {
			case st.Done:
				r.pos = end
			case len(st.Offset) > 0:
				var off SeqOffset
				if err := DecodeOffset(r.id, st.Offset, &off); err != nil {
					return nil, err
				}
				if off.Next < 0 || off.Next > end-start {
					return nil, BadOffset(r.id, "row %d is outside the split, which has %d rows", off.Next, end-start)
				}
				r.pos = start + off.Next
			}
		}
		rs.r = append(rs.r, r)
		rs.Owned += end - start
	}
	return rs, nil
}

// RangeBound is k*n/SplitCount without overflow.
func RangeBound(n, k int64) int64 {
	return k*(n/SplitCount) + k*(n%SplitCount)/SplitCount
}

// Peek returns the next rows to read, [a, b): at most limit(a) rows, running
// across ranges while they are contiguous and unstarted; last is the index
// of the last range it touches. ok is false when every range is read.
func (rs *RowRanges) Peek(limit func(a int64) int64) (a, b int64, last int, ok bool) {
	for rs.cur < len(rs.r) && rs.r[rs.cur].pos == rs.r[rs.cur].end {
		rs.cur++
	}
	if rs.cur == len(rs.r) {
		return 0, 0, 0, false
	}
	a = rs.r[rs.cur].pos
	want := a + limit(a)
	b = min(rs.r[rs.cur].end, want)
	last = rs.cur
	for b < want && last+1 < len(rs.r) {
		nx := rs.r[last+1]
		if nx.start != b || nx.pos != nx.start {
			break
		}
		last++
		b = min(nx.end, want)
	}
	return a, b, last, true
}

// Commit marks the rows up to b, from a peek that returned last, as read.
func (rs *RowRanges) Commit(b int64, last int) {
	for i := rs.cur; i <= last; i++ {
		rs.r[i].pos = min(rs.r[i].end, b)
	}
}

func (rs *RowRanges) Snapshot() []SplitState {
	out := make([]SplitState, 0, len(rs.r))
	for _, r := range rs.r {
		s := SplitState{Split: r.id}
		switch {
		case r.pos == r.end:
			s.Done = true
		case r.pos > r.start:
			s.Offset = EncodeOffset(SeqOffset{Next: r.pos - r.start})
		}
		out = append(out, s)
	}
	return out
}
