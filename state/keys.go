package state

import (
	"encoding/binary"
	"fmt"
)

// Key is the key of a state entry: the key group the caller computed from
// the record's key (partition.KeyGroups or keygroup.ForHash) and
// the serialized key. Keys with equal Bytes (nil and empty are equal) and
// Group are the same key. The backend copies Bytes; the caller may reuse
// them after the call.
type Key struct {
	Group int
	Bytes []byte
}

// Storage layout of a key (documented in doc.go):
//
//	state entry: group (2 bytes, big-endian) | uvarint len(name) | name |
//	             uvarint len(key) | key [| user key (map state)]
//	state meta:  0xFF | name
//
// Key groups are below 1<<15, so the first byte of a state entry is below
// 0x80 and the meta entries sort after every key group.
const (
	groupPrefixLen      = 2
	metaPrefix     byte = 0xFF
)

// appendGroup appends the 2-byte big-endian key group g.
func appendGroup(dst []byte, g int) []byte {
	return append(dst, byte(g>>8), byte(g))
}

// appendLenPrefixed appends uvarint(len(b)) and b.
func appendLenPrefixed(dst, b []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(b)))
	return append(dst, b...)
}

// groupSpan returns the bounds [lower, upper) of the key groups of r: every
// state entry of r, of every state, and nothing else.
func groupSpan(r KeyGroupRange) (lower, upper []byte) {
	return appendGroup(nil, r.Start), appendGroup(nil, r.End+1)
}

// prefixSuccessor returns the smallest key greater than every key that has
// prefix p, or nil (no upper bound) when p is all 0xFF bytes.
func prefixSuccessor(p []byte) []byte {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] != 0xFF {
			s := append([]byte(nil), p[:i+1]...)
			s[i]++
			return s
		}
	}
	return nil
}

// metaKey returns the key of the meta entry of state name.
func metaKey(name string) []byte {
	return append([]byte{metaPrefix}, name...)
}

// parsedKey is a state entry's key split into its parts; the slices alias
// the parsed key.
type parsedKey struct {
	group int
	name  []byte
	key   []byte
	rest  []byte // the map state's user key, empty for other kinds
}

// parseKey splits a state entry's key.
func parseKey(k []byte) (parsedKey, error) {
	if len(k) < groupPrefixLen || k[0] >= 0x80 {
		return parsedKey{}, fmt.Errorf("%w: malformed key %q", ErrCorrupt, k)
	}
	p := parsedKey{group: int(k[0])<<8 | int(k[1])}
	rest := k[groupPrefixLen:]
	var ok bool
	if p.name, rest, ok = cutLenPrefixed(rest); !ok {
		return parsedKey{}, fmt.Errorf("%w: malformed state name in key %q", ErrCorrupt, k)
	}
	if p.key, rest, ok = cutLenPrefixed(rest); !ok {
		return parsedKey{}, fmt.Errorf("%w: malformed key bytes in key %q", ErrCorrupt, k)
	}
	p.rest = rest
	return p, nil
}

// cutLenPrefixed splits b into a uvarint-length-prefixed field and the rest.
func cutLenPrefixed(b []byte) (field, rest []byte, ok bool) {
	n, w := binary.Uvarint(b)
	if w <= 0 || n > uint64(len(b)-w) {
		return nil, nil, false
	}
	return b[w : w+int(n)], b[w+int(n):], true
}

// stateKeys encodes the keys of one state. It holds a scratch buffer, so it
// is used by the backend's goroutine only.
type stateKeys struct {
	name    string
	nameSeg []byte // uvarint len(name) | name
	buf     []byte
}

func newStateKeys(name string) stateKeys {
	return stateKeys{name: name, nameSeg: appendLenPrefixed(nil, []byte(name))}
}

// entry returns the key of k's entry in the scratch buffer, valid until the
// next call.
func (s *stateKeys) entry(k Key) []byte {
	s.buf = appendLenPrefixed(append(appendGroup(s.buf[:0], k.Group), s.nameSeg...), k.Bytes)
	return s.buf
}

// groupPrefix returns a new slice holding the prefix of the state's entries
// in key group g.
func (s *stateKeys) groupPrefix(g int) []byte {
	return append(appendGroup(make([]byte, 0, groupPrefixLen+len(s.nameSeg)), g), s.nameSeg...)
}

// keyPrefixLen is the length of the prefix (group and name) of every entry
// of the state.
func (s *stateKeys) keyPrefixLen() int { return groupPrefixLen + len(s.nameSeg) }
