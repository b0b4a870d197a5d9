package state

import (
	"encoding/binary"
	"fmt"
	"time"
)

// TTLUpdate says which accesses refresh an entry's timestamp, as Flink's
// StateTtlConfig.UpdateType.
type TTLUpdate int8

const (
	// OnCreateAndWrite refreshes the timestamp when the entry is written
	// (the default).
	OnCreateAndWrite TTLUpdate = iota
	// OnReadAndWrite also refreshes it when the entry is read through the
	// state's point accessors (Get, Contains, a map's All); iterating a
	// whole state with ForEach does not.
	OnReadAndWrite
)

func (u TTLUpdate) String() string {
	switch u {
	case OnCreateAndWrite:
		return "OnCreateAndWrite"
	case OnReadAndWrite:
		return "OnReadAndWrite"
	}
	return fmt.Sprintf("TTLUpdate(%d)", int8(u))
}

// TTLVisibility says whether an expired entry that is still stored may be
// read, as Flink's StateTtlConfig.StateVisibility.
type TTLVisibility int8

const (
	// NeverReturnExpired hides expired entries (the default).
	NeverReturnExpired TTLVisibility = iota
	// ReturnExpiredIfNotCleanedUp returns an expired entry that has not
	// been removed yet, once: the read that returns it also removes it.
	ReturnExpiredIfNotCleanedUp
)

func (v TTLVisibility) String() string {
	switch v {
	case NeverReturnExpired:
		return "NeverReturnExpired"
	case ReturnExpiredIfNotCleanedUp:
		return "ReturnExpiredIfNotCleanedUp"
	}
	return fmt.Sprintf("TTLVisibility(%d)", int8(v))
}

// TTL is the time-to-live of the entries of a state, as Flink's
// StateTtlConfig: an entry (a value, a list element, a map entry) expires
// Duration after its timestamp, which is set when it is written and, with
// OnReadAndWrite, when it is read. Time has millisecond granularity and
// comes from Options.Clock.
type TTL struct {
	Duration   time.Duration
	Update     TTLUpdate
	Visibility TTLVisibility
}

// StateOption configures a state at registration.
type StateOption func(*stateConfig)

type stateConfig struct {
	ttl *TTL
}

// WithTTL gives the state's entries a time-to-live. Expired entries are
// invisible (unless ReturnExpiredIfNotCleanedUp), removed when a read finds
// them, by Backend.CleanupExpired, and when a snapshot is restored.
func WithTTL(ttl TTL) StateOption {
	return func(c *stateConfig) { c.ttl = &ttl }
}

// ttlPolicy is the TTL of a state in the form the read and write paths use.
type ttlPolicy struct {
	enabled       bool
	ms            int64
	updateOnRead  bool
	returnExpired bool
}

// newTTLPolicy validates ttl (nil: no TTL) and converts it.
func newTTLPolicy(ttl *TTL) (ttlPolicy, error) {
	if ttl == nil {
		return ttlPolicy{}, nil
	}
	switch {
	case ttl.Duration < time.Millisecond:
		return ttlPolicy{}, fmt.Errorf("TTL duration %v is below the TTL granularity of 1ms", ttl.Duration)
	case ttl.Update != OnCreateAndWrite && ttl.Update != OnReadAndWrite:
		return ttlPolicy{}, fmt.Errorf("unknown TTL update type %v", ttl.Update)
	case ttl.Visibility != NeverReturnExpired && ttl.Visibility != ReturnExpiredIfNotCleanedUp:
		return ttlPolicy{}, fmt.Errorf("unknown TTL visibility %v", ttl.Visibility)
	}
	return ttlPolicy{
		enabled:       true,
		ms:            ttl.Duration.Milliseconds(),
		updateOnRead:  ttl.Update == OnReadAndWrite,
		returnExpired: ttl.Visibility == ReturnExpiredIfNotCleanedUp,
	}, nil
}

// expired reports whether an entry with timestamp ts (hasTS false: written
// without TTL, never expires) has expired at now (milliseconds).
func (p ttlPolicy) expired(ts int64, hasTS bool, now int64) bool {
	return p.enabled && hasTS && ts+p.ms <= now
}

// Stored value layout: a header byte, then, when the header is
// headerTimestamp, the 8-byte big-endian write timestamp in Unix
// milliseconds, then the codec's bytes. The header is stored whether or not
// the state has a TTL, so that a state may gain or lose its TTL across a
// restore.
const (
	headerPlain     byte = 0
	headerTimestamp byte = 1
	timestampLen         = 8
)

// appendHeader appends the header of a value written at now (ms); with
// withTS false, the plain header.
func appendHeader(dst []byte, withTS bool, now int64) []byte {
	if !withTS {
		return append(dst, headerPlain)
	}
	return binary.BigEndian.AppendUint64(append(dst, headerTimestamp), uint64(now))
}

// parseHeader splits a stored value into its timestamp and payload.
func parseHeader(b []byte) (ts int64, hasTS bool, payload []byte, err error) {
	if len(b) == 0 {
		return 0, false, nil, fmt.Errorf("%w: empty value", ErrCorrupt)
	}
	switch b[0] {
	case headerPlain:
		return 0, false, b[1:], nil
	case headerTimestamp:
		if len(b) < 1+timestampLen {
			return 0, false, nil, fmt.Errorf("%w: truncated timestamp", ErrCorrupt)
		}
		return int64(binary.BigEndian.Uint64(b[1:])), true, b[1+timestampLen:], nil
	}
	return 0, false, nil, fmt.Errorf("%w: unknown value header %#x", ErrCorrupt, b[0])
}

// A list value is the concatenation of its elements, each
// uvarint len(element) | element, where element is a stored value (header,
// timestamp, payload). Appending an element is a Pebble merge (the default
// concatenating merger), as Flink's RocksDB list state.

// appendListElement appends one framed element.
func appendListElement(dst []byte, withTS bool, now int64, encode func([]byte) []byte) []byte {
	// Reserve the longest uvarint for the length, then move the element if
	// the length is shorter; elements are usually small, so the move is
	// cheap, and this avoids a second buffer.
	start := len(dst)
	dst = append(dst, make([]byte, binary.MaxVarintLen64)...)
	elemStart := len(dst)
	dst = encode(appendHeader(dst, withTS, now))
	n := len(dst) - elemStart
	w := binary.PutUvarint(dst[start:], uint64(n))
	copy(dst[start+w:], dst[elemStart:])
	return dst[:start+w+n]
}

// listElements calls fn with each element of a list value, in order; fn's
// raw is the whole framed element (for rewriting), elem the unframed one.
func listElements(b []byte, fn func(raw, elem []byte) error) error {
	for len(b) > 0 {
		elem, rest, ok := cutLenPrefixed(b)
		if !ok {
			return fmt.Errorf("%w: truncated list element", ErrCorrupt)
		}
		if err := fn(b[:len(b)-len(rest)], elem); err != nil {
			return err
		}
		b = rest
	}
	return nil
}
