package state

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// cleanupBatchBytes is the size at which the TTL sweep commits its batch.
const cleanupBatchBytes = 1 << 20

// CleanupExpired removes every expired entry (value, list element, map
// entry) of every state with a TTL in the backend, including states
// restored from a snapshot and not registered again yet (with the TTL the
// snapshot recorded), and returns how many entries it removed or rewrote.
// It reads the whole of those states: call it when idle, for instance after
// a checkpoint. It is the full-scan cleanup of Flink's StateTtlConfig.
func (b *Backend) CleanupExpired() (int, error) {
	if err := b.checkOpen(); err != nil {
		return 0, err
	}
	n, err := cleanupExpired(b.db, b.opts.KeyGroups, b.now())
	if err != nil {
		return n, b.wrapErr("clean up expired state: %w", err)
	}
	return n, nil
}

// cleanupExpired removes the entries of db's TTL states in key groups r
// that have expired at now (ms), whatever their visibility.
func cleanupExpired(db *pebble.DB, r KeyGroupRange, now int64) (int, error) {
	metas, err := readMetas(db)
	if err != nil {
		return 0, err
	}
	batch := db.NewBatch()
	defer func() { _ = batch.Close() }()
	n := 0
	var buf []byte
	for name, m := range metas {
		if !m.ttl.enabled {
			continue
		}
		keys := newStateKeys(name)
		err := scanState(db, r, keys.nameSeg, func(key, value []byte) error {
			out, keep, changed, err := expireEntry(buf[:0], m.kind, m.ttl, now, value)
			if err != nil {
				return fmt.Errorf("state %q: %w", name, err)
			}
			if !changed {
				return nil
			}
			buf = out[:0]
			n++
			if keep {
				err = batch.Set(key, out, nil)
			} else {
				err = batch.Delete(key, nil)
			}
			if err != nil {
				return err
			}
			if batch.Len() >= cleanupBatchBytes {
				if err := batch.Commit(pebble.NoSync); err != nil {
					return err
				}
				batch.Reset()
			}
			return nil
		})
		if err != nil {
			return n, err
		}
	}
	return n, batch.Commit(pebble.NoSync)
}

// expireEntry applies TTL p at now (ms) to the stored value v of a state of
// kind, whatever the visibility: keep is false when the entry (or every
// element of a list) expired; changed reports whether the entry must be
// rewritten (out, appended to dst) or deleted.
func expireEntry(dst []byte, kind stateKind, p ttlPolicy, now int64, v []byte) (out []byte, keep, changed bool, err error) {
	if !p.enabled {
		return v, true, false, nil
	}
	if kind == kindList {
		kept, changed, err := filterList(dst, v, p, now, false, nil)
		if err != nil || !changed {
			return v, true, false, err
		}
		return kept, len(kept) > 0, true, nil
	}
	ts, hasTS, _, err := parseHeader(v)
	if err != nil {
		return v, true, false, err
	}
	if p.expired(ts, hasTS, now) {
		return nil, false, true, nil
	}
	return v, true, false, nil
}
