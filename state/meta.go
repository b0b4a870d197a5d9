package state

import (
	"encoding/binary"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// stateKind is the kind of a registered state.
type stateKind uint8

const (
	kindValue stateKind = iota + 1
	kindList
	kindMap
	kindReducing
	kindAggregating
	kindTimers // one queue of a TimerService
)

func (k stateKind) String() string {
	switch k {
	case kindValue:
		return "value"
	case kindList:
		return "list"
	case kindMap:
		return "map"
	case kindReducing:
		return "reducing"
	case kindAggregating:
		return "aggregating"
	case kindTimers:
		return "timers"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// stateMeta is what the backend stores about a registered state, in the
// meta entry 0xFF|name, so that snapshots carry it: the kind (checked when
// a restored state is registered again) and the TTL (used to drop expired
// entries on restore, before the job registers its states).
type stateMeta struct {
	kind stateKind
	ttl  ttlPolicy
}

const metaVersion = 1

// encode returns the meta entry's value:
// version | kind | uvarint ttl ms (0: none) | flags (1: update on read, 2: return expired).
func (m stateMeta) encode() []byte {
	b := []byte{metaVersion, byte(m.kind)}
	var ms uint64
	if m.ttl.enabled {
		ms = uint64(m.ttl.ms)
	}
	b = binary.AppendUvarint(b, ms)
	var flags byte
	if m.ttl.updateOnRead {
		flags |= 1
	}
	if m.ttl.returnExpired {
		flags |= 2
	}
	return append(b, flags)
}

func decodeMeta(b []byte) (stateMeta, error) {
	if len(b) < 3 || b[0] != metaVersion {
		return stateMeta{}, fmt.Errorf("%w: bad state meta entry %x", ErrCorrupt, b)
	}
	m := stateMeta{kind: stateKind(b[1])}
	if m.kind < kindValue || m.kind > kindTimers {
		return stateMeta{}, fmt.Errorf("%w: unknown state kind %d", ErrCorrupt, b[1])
	}
	ms, w := binary.Uvarint(b[2:])
	if w <= 0 || len(b) != 2+w+1 {
		return stateMeta{}, fmt.Errorf("%w: bad state meta entry %x", ErrCorrupt, b)
	}
	if ms > 0 {
		flags := b[2+w]
		m.ttl = ttlPolicy{enabled: true, ms: int64(ms), updateOnRead: flags&1 != 0, returnExpired: flags&2 != 0}
	}
	return m, nil
}

// readMetas returns the meta entries of db by state name.
func readMetas(db pebble.Reader) (map[string]stateMeta, error) {
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: []byte{metaPrefix}})
	if err != nil {
		return nil, err
	}
	metas := make(map[string]stateMeta)
	for ok := it.First(); ok; ok = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			_ = it.Close()
			return nil, err
		}
		m, err := decodeMeta(v)
		if err != nil {
			_ = it.Close()
			return nil, fmt.Errorf("state %q: %w", it.Key()[1:], err)
		}
		metas[string(it.Key()[1:])] = m
	}
	return metas, it.Close()
}
