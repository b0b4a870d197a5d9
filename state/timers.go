package state

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/cockroachdb/pebble/v2"
)

// Timer is a timer of a TimerService: it fires for Key and Namespace once
// the watermark (event time) or the clock (processing time) reaches
// Timestamp, in milliseconds. Keys and namespaces with equal bytes (nil and
// empty are equal) are the same.
type Timer struct {
	Timestamp int64
	Key       Key
	Namespace []byte
}

// TimerService holds the timers of one operator's timer service, as Flink's
// InternalTimerService: event-time timers, fired by AdvanceWatermark, and
// processing-time timers, fired by AdvanceProcessingTime, each deduplicated
// by (timestamp, key, namespace) and stored in the backend's Pebble
// database by key group, so that snapshots, restores and rescaling carry
// them like any other state (see "Timers" in the package documentation).
//
// Like the backend, a TimerService is used by the task's goroutine only.
type TimerService struct {
	b          *Backend
	name       string
	event      *timerQueue
	processing *timerQueue
	watermark  int64
	firing     bool // AdvanceWatermark or AdvanceProcessingTime is running
}

// Timer state names, as Flink's: the queues are states of the backend
// (kind "timers"), so a value or map state cannot take their names.
const (
	eventTimerStatePrefix      = "_timer_state/event_"
	processingTimerStatePrefix = "_timer_state/processing_"
)

// NewTimerService registers the timer service name in b ("window-timers",
// "join-timers": one per purpose of an operator) and loads the earliest
// timer of every key group that a restored snapshot holds. Registering a
// name again returns the same service.
func NewTimerService(b *Backend, name string) (*TimerService, error) {
	if b == nil {
		return nil, fmt.Errorf("%w: timer service %q: nil backend", ErrInvalidState, name)
	}
	if name == "" {
		return nil, fmt.Errorf("%w: empty timer service name", ErrInvalidState)
	}
	if s, ok := b.timerServices[name]; ok {
		if err := b.checkOpen(); err != nil {
			return nil, err
		}
		return s, nil
	}
	s := &TimerService{b: b, name: name, watermark: math.MinInt64}
	var err error
	if s.event, err = newTimerQueue(b, eventTimerStatePrefix+name, "event-time"); err != nil {
		return nil, err
	}
	if s.processing, err = newTimerQueue(b, processingTimerStatePrefix+name, "processing-time"); err != nil {
		return nil, err
	}
	if b.timerServices == nil {
		b.timerServices = make(map[string]*TimerService)
	}
	b.timerServices[name] = s
	return s, nil
}

// Name returns the service's name.
func (s *TimerService) Name() string { return s.name }

// CurrentWatermark returns the watermark of the last AdvanceWatermark, or
// math.MinInt64 before the first: watermarks are not checkpointed, a
// restored service starts again from the minimum (as Flink).
func (s *TimerService) CurrentWatermark() int64 { return s.watermark }

// RegisterEventTimeTimer registers a timer firing for (k, namespace) when
// the watermark reaches ts. Registering an existing timer does nothing; a
// timer at or before the current watermark fires with the next
// AdvanceWatermark. It fails with ErrKeyGroup when k is outside the
// backend's key groups.
func (s *TimerService) RegisterEventTimeTimer(k Key, namespace []byte, ts int64) error {
	return s.event.add(k, namespace, ts)
}

// DeleteEventTimeTimer removes the timer (ts, k, namespace), if there is
// one.
func (s *TimerService) DeleteEventTimeTimer(k Key, namespace []byte, ts int64) error {
	return s.event.remove(k, namespace, ts)
}

// NextEventTime returns the timestamp of the earliest event-time timer, and
// false when there is none. It reads no storage.
func (s *TimerService) NextEventTime() (int64, bool) { return s.event.next() }

// AdvanceWatermark sets the current watermark to wm and fires every
// event-time timer with a timestamp at or before wm, as Flink's
// InternalTimerServiceImpl.advanceWatermark: in timestamp order, ties by
// key (shorter first, then bytes) and then namespace bytes; each timer is
// removed before fire is called with it, so fire may register it again. A
// timer that fire registers at or before wm fires in this same call. The
// Timer's slices are fire's to keep. An error of fire stops the advance and
// is returned as is (the timer it was called with is already removed). With
// nothing due it costs a comparison: it reads no storage.
//
// fire must not call AdvanceWatermark or AdvanceProcessingTime.
func (s *TimerService) AdvanceWatermark(wm int64, fire func(Timer) error) error {
	if err := s.beginFiring("AdvanceWatermark"); err != nil {
		return err
	}
	defer s.endFiring()
	s.watermark = wm
	return s.event.fireUntil(wm, fire)
}

// RegisterProcessingTimeTimer registers a timer firing for (k, namespace)
// when AdvanceProcessingTime reaches ts (ms). The caller schedules the
// wake-up from NextProcessingTime.
func (s *TimerService) RegisterProcessingTimeTimer(k Key, namespace []byte, ts int64) error {
	return s.processing.add(k, namespace, ts)
}

// DeleteProcessingTimeTimer removes the processing-time timer (ts, k,
// namespace), if there is one.
func (s *TimerService) DeleteProcessingTimeTimer(k Key, namespace []byte, ts int64) error {
	return s.processing.remove(k, namespace, ts)
}

// NextProcessingTime returns the timestamp of the earliest processing-time
// timer, and false when there is none: the time the task should next call
// AdvanceProcessingTime (after a restore too).
func (s *TimerService) NextProcessingTime() (int64, bool) { return s.processing.next() }

// AdvanceProcessingTime fires every processing-time timer with a timestamp
// at or before now, with the order and the rules of AdvanceWatermark.
func (s *TimerService) AdvanceProcessingTime(now int64, fire func(Timer) error) error {
	if err := s.beginFiring("AdvanceProcessingTime"); err != nil {
		return err
	}
	defer s.endFiring()
	return s.processing.fireUntil(now, fire)
}

func (s *TimerService) beginFiring(op string) error {
	if err := s.b.checkOpen(); err != nil {
		return err
	}
	if s.firing {
		return fmt.Errorf("%w: timer service %q (operator %q subtask %d): %s called while timers are firing; "+
			"register timers from the callback instead, they fire in the same advance when due",
			ErrInvalidState, s.name, s.b.opts.OperatorUID, s.b.opts.Subtask, op)
	}
	s.firing = true
	return nil
}

func (s *TimerService) endFiring() { s.firing = false }

// Storage of a timer (documented in doc.go): one Pebble entry with an
// empty value per timer, in the layout of a state entry whose key is the
// timestamp and whose rest is the timer's key and namespace:
//
//	group (2 bytes) | uvarint len(name) | name | 0x08 | timestamp (8 bytes,
//	big-endian, sign bit flipped) | uvarint len(key) | key | namespace
//
// so that parseKey, the TTL sweep and the rescaling restore treat timers
// like any state entry, and a key group's timers are ordered by timestamp,
// then key, then namespace. The timestamp takes timestampLen (8) bytes.

// appendTimestamp appends ts so that the bytes sort as the numbers do,
// negative ones included.
func appendTimestamp(dst []byte, ts int64) []byte {
	return binary.BigEndian.AppendUint64(dst, uint64(ts)^(1<<63))
}

func decodeTimestamp(b []byte) int64 {
	return int64(binary.BigEndian.Uint64(b) ^ (1 << 63))
}

// timerCacheEntries is the number of timers a queue caches in memory,
// divided among its key groups; each key group caches between
// minTimerCache and maxTimerCache of its earliest timers.
const (
	timerCacheEntries = 1 << 14
	minTimerCache     = 8
	maxTimerCache     = 128
)

// timerQueue is one priority queue of timers (event or processing time),
// as Flink's KeyGroupPartitionedPriorityQueue over RocksDB's caching
// queues: the timers live in Pebble, and each key group caches its
// earliest timers in memory; a heap of the key groups ordered by their
// earliest timer gives the queue's head without reading storage.
type timerQueue struct {
	b      *Backend
	domain string // "event-time" or "processing-time", for errors
	keys   stateKeys
	groups KeyGroupRange
	caches []timerCache // by key group - groups.Start
	heap   []int32      // indexes into caches of the groups with timers, a min-heap by earliest timer
	pos    []int32      // position of each group in heap, -1 when absent
	limit  int          // timers cached per key group at most
	buf    []byte       // scratch key
	// failed is the error of a failed reload, after which a cache no
	// longer knows its key group's earliest timers: every later call fails.
	failed error
}

// timerCache holds the earliest timers of a key group, ascending: about
// limit of them (limit+1 right after a reload). Invariant between calls:
// timers is empty only when complete, and every timer of the group in
// Pebble that is not in timers sorts after its last one.
type timerCache struct {
	timers   []cachedTimer
	complete bool // timers holds every timer of the key group
}

type cachedTimer struct {
	ts  int64
	key []byte // the Pebble key, owned by the cache
}

func newTimerQueue(b *Backend, name, domain string) (*timerQueue, error) {
	if _, err := b.register(name, kindTimers, nil); err != nil {
		return nil, err
	}
	r := b.opts.KeyGroups
	q := &timerQueue{
		b:      b,
		domain: domain,
		keys:   newStateKeys(name),
		groups: r,
		caches: make([]timerCache, r.Len()),
		pos:    make([]int32, r.Len()),
		limit:  min(max(timerCacheEntries/r.Len(), minTimerCache), maxTimerCache),
	}
	for i := range q.pos {
		q.pos[i] = -1
	}
	if err := q.loadHeads(); err != nil {
		return nil, q.errorf("load restored timers", err)
	}
	return q, nil
}

// loadHeads fills every key group's cache with its earliest timer, with one
// iterator that skips key groups without entries.
func (q *timerQueue) loadHeads() error {
	lower, upper := groupSpan(q.groups)
	it, err := q.b.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return err
	}
	defer it.Close()
	for g := q.groups.Start; g <= q.groups.End; g++ {
		i := g - q.groups.Start
		prefix := q.keys.groupPrefix(g)
		if it.SeekGE(prefix) && bytes.HasPrefix(it.Key(), prefix) {
			t, err := q.cached(it.Key())
			if err != nil {
				return err
			}
			q.caches[i].timers = append(q.caches[i].timers, t)
			q.fix(i)
		} else {
			q.caches[i].complete = true
		}
		if err := it.Error(); err != nil {
			return err
		}
		if !it.Valid() {
			for j := i + 1; j < len(q.caches); j++ {
				q.caches[j].complete = true
			}
			return nil
		}
		if next := int(it.Key()[0])<<8 | int(it.Key()[1]); next > g+1 {
			for j := i + 1; j < next-q.groups.Start && j < len(q.caches); j++ {
				q.caches[j].complete = true
			}
			g = next - 1 // skip key groups without entries of any state
		}
	}
	return nil
}

// cached returns the cache entry of the timer whose Pebble key is k (copied).
func (q *timerQueue) cached(k []byte) (cachedTimer, error) {
	off := q.keys.keyPrefixLen()
	if len(k) < off+1+timestampLen || k[off] != timestampLen {
		return cachedTimer{}, fmt.Errorf("%w: malformed timer key %q", ErrCorrupt, k)
	}
	return cachedTimer{ts: decodeTimestamp(k[off+1:]), key: bytes.Clone(k)}, nil
}

// encode returns the Pebble key of a timer in the scratch buffer, valid
// until the next call.
func (q *timerQueue) encode(k Key, namespace []byte, ts int64) []byte {
	b := append(appendGroup(q.buf[:0], k.Group), q.keys.nameSeg...)
	b = append(b, timestampLen)
	b = appendTimestamp(b, ts)
	b = appendLenPrefixed(b, k.Bytes)
	q.buf = append(b, namespace...)
	return q.buf
}

// decode returns the timer whose Pebble key is k; its slices alias k.
func (q *timerQueue) decode(c cachedTimer) (Timer, error) {
	k := c.key
	key, ns, ok := cutLenPrefixed(k[q.keys.keyPrefixLen()+1+timestampLen:])
	if !ok {
		return Timer{}, fmt.Errorf("%w: malformed timer key %q", ErrCorrupt, k)
	}
	return Timer{Timestamp: c.ts, Key: Key{Group: int(k[0])<<8 | int(k[1]), Bytes: key}, Namespace: ns}, nil
}

func (q *timerQueue) check(k Key) error {
	if err := q.usable(); err != nil {
		return err
	}
	if !q.groups.Contains(k.Group) {
		return fmt.Errorf("%w: %s timers %q (operator %q subtask %d): key group %d is outside %v",
			ErrKeyGroup, q.domain, q.keys.name, q.b.opts.OperatorUID, q.b.opts.Subtask, k.Group, q.groups)
	}
	return nil
}

// usable returns ErrClosed after Close and the error that broke the queue.
func (q *timerQueue) usable() error {
	if err := q.b.checkOpen(); err != nil {
		return err
	}
	if q.failed != nil {
		return q.errorf("use", q.failed)
	}
	return nil
}

func (q *timerQueue) errorf(op string, err error) error {
	if errors.Is(err, ErrClosed) {
		return err
	}
	return fmt.Errorf("state: %s timers %q (operator %q subtask %d): %s: %w",
		q.domain, q.keys.name, q.b.opts.OperatorUID, q.b.opts.Subtask, op, err)
}

// add stores the timer and caches it when it is among its key group's
// cached earliest. A timer found in the cache is registered already: no
// write (a window operator registers its timer for every row of a window).
func (q *timerQueue) add(k Key, namespace []byte, ts int64) error {
	if err := q.check(k); err != nil {
		return err
	}
	key := q.encode(k, namespace, ts)
	i := k.Group - q.groups.Start
	c := &q.caches[i]
	if !c.complete && bytes.Compare(key, c.timers[len(c.timers)-1].key) > 0 {
		// After the cached ones: loaded when they are gone. Setting an
		// existing timer again rewrites the same empty value: that is the
		// deduplication, without a read.
		if err := q.b.db.Set(key, nil, pebble.NoSync); err != nil {
			return q.errorf("register", err)
		}
		return nil
	}
	j, found := slices.BinarySearchFunc(c.timers, key, compareCached)
	if found {
		return nil
	}
	if err := q.b.db.Set(key, nil, pebble.NoSync); err != nil {
		return q.errorf("register", err)
	}
	c.timers = slices.Insert(c.timers, j, cachedTimer{ts: ts, key: bytes.Clone(key)})
	if len(c.timers) > q.limit {
		c.timers[len(c.timers)-1] = cachedTimer{}
		c.timers = c.timers[:len(c.timers)-1]
		c.complete = false
	}
	if j == 0 {
		q.fix(i)
	}
	return nil
}

// remove deletes the timer, if there is one.
func (q *timerQueue) remove(k Key, namespace []byte, ts int64) error {
	if err := q.check(k); err != nil {
		return err
	}
	key := q.encode(k, namespace, ts)
	if err := q.b.db.Delete(key, pebble.NoSync); err != nil {
		return q.errorf("delete", err)
	}
	i := k.Group - q.groups.Start
	c := &q.caches[i]
	j, found := slices.BinarySearchFunc(c.timers, key, compareCached)
	if !found {
		return nil
	}
	removed := c.timers[j]
	c.timers = slices.Delete(c.timers, j, j+1)
	var err error
	if len(c.timers) == 0 && !c.complete {
		err = q.reload(i, removed.key)
	}
	if j == 0 {
		q.fix(i)
	}
	if err != nil {
		return q.errorf("delete", err)
	}
	return nil
}

func compareCached(t cachedTimer, key []byte) int { return bytes.Compare(t.key, key) }

// reload appends to the cache of key group index i the group's next
// timers after from, up to limit of them: from is the last cached timer,
// about to be fired, or the last one deleted, so every timer of the group
// not cached sorts after it, and the iterator starts past the deletions of
// the timers fired before.
func (q *timerQueue) reload(i int, from []byte) error {
	c := &q.caches[i]
	upper := prefixSuccessor(q.keys.groupPrefix(q.groups.Start + i))
	it, err := q.b.db.NewIter(&pebble.IterOptions{LowerBound: from, UpperBound: upper})
	if err != nil {
		q.failed = fmt.Errorf("an earlier load of timers from Pebble failed: %w", err)
		return err
	}
	defer it.Close()
	ok := it.First()
	if ok && bytes.Equal(it.Key(), from) {
		ok = it.Next()
	}
	for n := 0; ok && n < q.limit; ok, n = it.Next(), n+1 {
		t, err := q.cached(it.Key())
		if err != nil {
			q.failed = fmt.Errorf("an earlier load of timers failed: %w", err)
			return err
		}
		c.timers = append(c.timers, t)
	}
	if err := it.Error(); err != nil {
		q.failed = fmt.Errorf("an earlier load of timers from Pebble failed: %w", err)
		return err
	}
	c.complete = !ok
	return nil
}

// next returns the earliest timestamp of the queue.
func (q *timerQueue) next() (int64, bool) {
	if len(q.heap) == 0 {
		return 0, false
	}
	return q.caches[q.heap[0]].timers[0].ts, true
}

// fireUntil removes and fires the queue's timers with timestamps at or
// before t, in order, while fire may add and remove timers.
func (q *timerQueue) fireUntil(t int64, fire func(Timer) error) error {
	if err := q.usable(); err != nil {
		return err
	}
	for len(q.heap) > 0 {
		if err := q.b.checkOpen(); err != nil { // fire closed the backend
			return err
		}
		i := int(q.heap[0])
		c := &q.caches[i]
		head := c.timers[0]
		if head.ts > t {
			return nil
		}
		// Load the group's next timers before removing its last cached
		// one, so that a failed load loses no timer.
		if len(c.timers) == 1 && !c.complete {
			if err := q.reload(i, head.key); err != nil {
				return q.errorf("load timers", err)
			}
		}
		if err := q.b.db.Delete(head.key, pebble.NoSync); err != nil {
			return q.errorf("remove fired timer", err)
		}
		c.timers[0] = cachedTimer{}
		c.timers = c.timers[1:]
		q.fix(i)
		timer, err := q.decode(head)
		if err != nil {
			return q.errorf("fire", err)
		}
		if err := fire(timer); err != nil {
			return err
		}
	}
	return nil
}

// less orders key groups (indexes into caches) by their earliest timer:
// timestamp, then key and namespace (the Pebble key after the group and
// name), then key group, which the key decides anyway.
func (q *timerQueue) less(a, b int32) bool {
	x, y := q.caches[a].timers[0], q.caches[b].timers[0]
	if x.ts != y.ts {
		return x.ts < y.ts
	}
	off := q.keys.keyPrefixLen()
	if c := bytes.Compare(x.key[off:], y.key[off:]); c != 0 {
		return c < 0
	}
	return a < b
}

// fix restores the heap after the earliest timer of key group index i
// changed: it enters, moves or leaves the heap.
func (q *timerQueue) fix(i int) {
	p := q.pos[i]
	switch {
	case len(q.caches[i].timers) == 0:
		if p < 0 {
			return
		}
		last := len(q.heap) - 1
		q.swap(int(p), last)
		q.heap = q.heap[:last]
		q.pos[i] = -1
		if int(p) < last {
			q.down(int(p))
			q.up(int(p))
		}
	case p < 0:
		q.heap = append(q.heap, int32(i))
		q.pos[i] = int32(len(q.heap) - 1)
		q.up(len(q.heap) - 1)
	default:
		q.down(int(p))
		q.up(int(p))
	}
}

func (q *timerQueue) swap(a, b int) {
	q.heap[a], q.heap[b] = q.heap[b], q.heap[a]
	q.pos[q.heap[a]] = int32(a)
	q.pos[q.heap[b]] = int32(b)
}

func (q *timerQueue) up(j int) {
	for j > 0 {
		parent := (j - 1) / 2
		if !q.less(q.heap[j], q.heap[parent]) {
			return
		}
		q.swap(j, parent)
		j = parent
	}
}

func (q *timerQueue) down(j int) {
	n := len(q.heap)
	for {
		l := 2*j + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && q.less(q.heap[r], q.heap[l]) {
			m = r
		}
		if !q.less(q.heap[m], q.heap[j]) {
			return
		}
		q.swap(j, m)
		j = m
	}
}
