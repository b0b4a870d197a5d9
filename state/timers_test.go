package state

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
)

// timerString formats a timer for comparisons: ts|group|key|namespace.
func timerString(tm Timer) string {
	return fmt.Sprintf("%d|%d|%s|%s", tm.Timestamp, tm.Key.Group, tm.Key.Bytes, tm.Namespace)
}

// compareTimers is the documented firing order: timestamp, then key
// (shorter first, then bytes), then namespace bytes.
func compareTimers(a, b Timer) int {
	if a.Timestamp != b.Timestamp {
		if a.Timestamp < b.Timestamp {
			return -1
		}
		return 1
	}
	if len(a.Key.Bytes) != len(b.Key.Bytes) {
		return len(a.Key.Bytes) - len(b.Key.Bytes)
	}
	if c := bytes.Compare(a.Key.Bytes, b.Key.Bytes); c != 0 {
		return c
	}
	return bytes.Compare(a.Namespace, b.Namespace)
}

// timerModel is the reference: the set of registered timers.
type timerModel map[string]Timer

func (m timerModel) add(tm Timer)    { m[timerString(tm)] = tm }
func (m timerModel) remove(tm Timer) { delete(m, timerString(tm)) }

// due returns the model's timers at or before wm, in firing order.
func (m timerModel) due(wm int64) []string {
	var ts []Timer
	for _, tm := range m {
		if tm.Timestamp <= wm {
			ts = append(ts, tm)
		}
	}
	slices.SortFunc(ts, compareTimers)
	out := make([]string, len(ts))
	for i, tm := range ts {
		out[i] = timerString(tm)
	}
	return out
}

// min returns the model's first timer in firing order.
func (m timerModel) min() (Timer, bool) {
	var best Timer
	found := false
	for _, tm := range m {
		if !found || compareTimers(tm, best) < 0 {
			best, found = tm, true
		}
	}
	return best, found
}

func newTimerService(t testing.TB, b *Backend, name string) *TimerService {
	t.Helper()
	s, err := NewTimerService(b, name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// advance advances s's watermark to wm and returns the fired timers.
func advance(t testing.TB, s *TimerService, wm int64) []string {
	t.Helper()
	var fired []string
	if err := s.AdvanceWatermark(wm, func(tm Timer) error {
		fired = append(fired, timerString(tm))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return fired
}

func register(t testing.TB, s *TimerService, tm Timer) {
	t.Helper()
	if err := s.RegisterEventTimeTimer(tm.Key, tm.Namespace, tm.Timestamp); err != nil {
		t.Fatal(err)
	}
}

func timer(ts int64, key Key, ns string) Timer {
	return Timer{Timestamp: ts, Key: key, Namespace: []byte(ns)}
}

// cacheLimits are the per-key-group cache sizes the tests run with: the
// default, and tiny ones that make every path of the cache run (eviction,
// reload after the cache drains, a head loaded from Pebble).
var cacheLimits = []int{0, 1, 2, 3}

func setCacheLimit(s *TimerService, limit int) {
	if limit > 0 {
		s.event.limit, s.processing.limit = limit, limit
	}
}

func TestTimersFireInOrder(t *testing.T) {
	for _, limit := range cacheLimits {
		t.Run(fmt.Sprintf("cache=%d", limit), func(t *testing.T) {
			b := openBackend(t, testOptions(t, KeyGroupRange{Start: 0, End: 127}))
			s := newTimerService(t, b, "window-timers")
			setCacheLimit(s, limit)
			rng := rand.New(rand.NewPCG(7, uint64(limit)))
			model := timerModel{}
			for range 3000 {
				key := testKey(rng.IntN(300))
				if rng.IntN(10) == 0 {
					key = k(key.Group, fmt.Sprint(key.Group)) // short keys sort first
				}
				tm := timer(rng.Int64N(2000)-1000, key, fmt.Sprint("w", rng.IntN(3)))
				register(t, s, tm)
				register(t, s, tm) // deduplicated
				model.add(tm)
			}
			for _, wm := range []int64{-2000, -1000, -999, -500, -1, 0, 1, 500, 500, 998, math.MaxInt64} {
				want := model.due(wm)
				got := advance(t, s, wm)
				if d := firstDifference(got, want); d >= 0 {
					t.Fatalf("advance to %d fired %d timers, want %d; first difference at %d: %q",
						wm, len(got), len(want), d, [][]string{got[d:min(d+3, len(got))], want[d:min(d+3, len(want))]})
				}
				for _, f := range want {
					delete(model, f)
				}
				if s.CurrentWatermark() != wm {
					t.Fatalf("CurrentWatermark %d, want %d", s.CurrentWatermark(), wm)
				}
			}
			if _, ok := s.NextEventTime(); ok {
				t.Fatal("timers left after advancing to the maximum watermark")
			}
			if keys := timerKeys(t, b, s.event); len(keys) != 0 {
				t.Fatalf("fired timers left %d entries in Pebble", len(keys))
			}
		})
	}
}

// firstDifference returns the first index where got and want differ, -1
// when they are equal.
func firstDifference(got, want []string) int {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return i
		}
	}
	if len(got) != len(want) {
		return min(len(got), len(want))
	}
	return -1
}

// timerKeys returns the Pebble keys of q's timers.
func timerKeys(t testing.TB, b *Backend, q *timerQueue) [][]byte {
	t.Helper()
	var out [][]byte
	if err := scanState(b.db, b.opts.KeyGroups, q.keys.nameSeg, func(key, _ []byte) error {
		out = append(out, bytes.Clone(key))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestTimersAgainstModel runs random registrations, deletions and
// advances, with callbacks that register and delete timers while firing,
// against the reference model in lockstep: every fired timer must be the
// model's earliest, and nothing due may be left after an advance.
func TestTimersAgainstModel(t *testing.T) {
	for _, limit := range cacheLimits {
		t.Run(fmt.Sprintf("cache=%d", limit), func(t *testing.T) {
			b := openBackend(t, testOptions(t, KeyGroupRange{Start: 10, End: 40}))
			s := newTimerService(t, b, "t")
			setCacheLimit(s, limit)
			rng := rand.New(rand.NewPCG(11, uint64(limit)))
			model := timerModel{}
			randomTimer := func(lo, hi int64) Timer {
				g := 10 + rng.IntN(31)
				return timer(lo+rng.Int64N(hi-lo), k(g, fmt.Sprint("k", g, "-", rng.IntN(4))), fmt.Sprint(rng.IntN(2)))
			}
			// mutate registers or deletes a random timer around ts in both
			// the service and the model.
			mutate := func(lo, hi int64) {
				tm := randomTimer(lo, hi)
				if rng.IntN(3) == 0 {
					if existing, ok := anyTimer(model, rng); ok && rng.IntN(2) == 0 {
						tm = existing
					}
					if err := s.DeleteEventTimeTimer(tm.Key, tm.Namespace, tm.Timestamp); err != nil {
						t.Fatal(err)
					}
					model.remove(tm)
					return
				}
				register(t, s, tm)
				model.add(tm)
			}
			wm := int64(-100)
			fired := 0
			for step := range 400 {
				for range rng.IntN(20) {
					mutate(wm-20, wm+200)
				}
				wm += rng.Int64N(30) - 5 // watermarks may repeat; the service does not check them
				err := s.AdvanceWatermark(wm, func(tm Timer) error {
					want, ok := model.min()
					if !ok || timerString(want) != timerString(tm) || tm.Timestamp > wm {
						return fmt.Errorf("step %d: fired %s, the model's next is %s (watermark %d)", step, timerString(tm), timerString(want), wm)
					}
					model.remove(tm)
					fired++
					if rng.IntN(4) == 0 {
						mutate(tm.Timestamp-10, wm+50) // also before the firing timer and at or before wm
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				if due := model.due(wm); len(due) > 0 {
					t.Fatalf("step %d: %d timers due at watermark %d did not fire: %.5q", step, len(due), wm, due)
				}
				next, ok := s.NextEventTime()
				want, wantOK := model.min()
				if ok != wantOK || (ok && next != want.Timestamp) {
					t.Fatalf("step %d: NextEventTime %d %v, model %d %v", step, next, ok, want.Timestamp, wantOK)
				}
			}
			if fired < 1000 {
				t.Fatalf("only %d timers fired: the test does not exercise the queue", fired)
			}
			got := advance(t, s, math.MaxInt64)
			if want := model.due(math.MaxInt64); !slices.Equal(got, want) {
				t.Fatalf("final advance fired %d timers, want %d", len(got), len(want))
			}
		})
	}
}

// anyTimer returns a random timer of m.
func anyTimer(m timerModel, rng *rand.Rand) (Timer, bool) {
	if len(m) == 0 {
		return Timer{}, false
	}
	n := rng.IntN(len(m))
	for _, tm := range m {
		if n == 0 {
			return tm, true
		}
		n--
	}
	return Timer{}, false
}

func TestTimersDedupAndDelete(t *testing.T) {
	b := openBackend(t, testOptions(t, KeyGroupRange{Start: 0, End: 127}))
	s := newTimerService(t, b, "t")
	a, c := k(1, "a"), k(2, "c")
	for _, tm := range []Timer{
		timer(10, a, "w1"), timer(10, a, "w1"), timer(10, a, "w2"), timer(10, c, "w1"),
		timer(5, a, "w1"), timer(20, c, ""), timer(20, c, ""), timer(30, a, "w1"),
	} {
		register(t, s, tm)
	}
	// Nil and empty namespaces and keys are the same.
	if err := s.RegisterEventTimeTimer(Key{Group: 3}, nil, 7); err != nil {
		t.Fatal(err)
	}
	if err := s.RegisterEventTimeTimer(Key{Group: 3, Bytes: []byte{}}, []byte{}, 7); err != nil {
		t.Fatal(err)
	}
	for _, d := range []Timer{
		timer(5, a, "w1"),  // the head
		timer(10, a, "w2"), // in the middle
		timer(11, a, "w2"), // not registered
		timer(10, k(9, "a"), "w1"),
	} {
		if err := s.DeleteEventTimeTimer(d.Key, d.Namespace, d.Timestamp); err != nil {
			t.Fatal(err)
		}
	}
	if next, ok := s.NextEventTime(); !ok || next != 7 {
		t.Fatalf("NextEventTime %d %v, want 7", next, ok)
	}
	got := advance(t, s, 25)
	want := []string{"7|3||", "10|1|a|w1", "10|2|c|w1", "20|2|c|"}
	if !slices.Equal(got, want) {
		t.Fatalf("fired %q, want %q", got, want)
	}
	if got := advance(t, s, 25); len(got) != 0 {
		t.Fatalf("fired again: %q", got)
	}
	if got := advance(t, s, 30); !slices.Equal(got, []string{"30|1|a|w1"}) {
		t.Fatalf("fired %q", got)
	}
}

func TestTimersRegisteredWhileFiring(t *testing.T) {
	b := openBackend(t, testOptions(t, KeyGroupRange{Start: 0, End: 127}))
	s := newTimerService(t, b, "t")
	a, c := k(1, "a"), k(2, "c")
	register(t, s, timer(10, a, "x"))
	register(t, s, timer(20, c, "x"))
	register(t, s, timer(40, c, "x"))
	var fired []string
	first := true
	err := s.AdvanceWatermark(30, func(tm Timer) error {
		fired = append(fired, timerString(tm))
		if !first {
			return nil
		}
		first = false
		register(t, s, tm)                   // removed before firing: registering it again fires it again
		register(t, s, timer(15, c, "y"))    // due: fires in this advance
		register(t, s, timer(31, a, "late")) // not due
		register(t, s, timer(30, c, "y"))    // due: the watermark itself
		register(t, s, timer(5, a, "early")) // before the firing timer: fires next
		return s.DeleteEventTimeTimer(c, []byte("x"), 20)
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"10|1|a|x", "5|1|a|early", "10|1|a|x", "15|2|c|y", "30|2|c|y"}
	if !slices.Equal(fired, want) {
		t.Fatalf("fired %q, want %q", fired, want)
	}
	if got := advance(t, s, math.MaxInt64); !slices.Equal(got, []string{"31|1|a|late", "40|2|c|x"}) {
		t.Fatalf("then fired %q", got)
	}
}

func TestTimersNegativeTimestamps(t *testing.T) {
	stamps := []int64{math.MinInt64, math.MinInt64 + 1, -1 << 40, -256, -255, -1, 0, 1, 255, 256, 1 << 40, math.MaxInt64 - 1, math.MaxInt64}
	for i := 1; i < len(stamps); i++ {
		if x, y := appendTimestamp(nil, stamps[i-1]), appendTimestamp(nil, stamps[i]); bytes.Compare(x, y) >= 0 {
			t.Fatalf("encoding of %d (%x) does not sort before %d (%x)", stamps[i-1], x, stamps[i], y)
		}
		if got := decodeTimestamp(appendTimestamp(nil, stamps[i])); got != stamps[i] {
			t.Fatalf("decode(encode(%d)) = %d", stamps[i], got)
		}
	}
	b := openBackend(t, testOptions(t, KeyGroupRange{Start: 0, End: 127}))
	s := newTimerService(t, b, "t")
	var want []string
	for i, ts := range stamps {
		key := k(i%3, "k")
		want = append(want, timerString(timer(ts, key, "")))
	}
	for _, i := range rand.New(rand.NewPCG(1, 1)).Perm(len(stamps)) {
		register(t, s, timer(stamps[i], k(i%3, "k"), ""))
	}
	got := advance(t, s, -1)
	got = append(got, advance(t, s, math.MaxInt64)...)
	if !slices.Equal(got, want) {
		t.Fatalf("fired %q\nwant %q", got, want)
	}
	// The minimum watermark fires the timers at the minimum timestamp.
	register(t, s, timer(math.MinInt64, k(0, "k"), ""))
	if got := advance(t, s, math.MinInt64); len(got) != 1 {
		t.Fatalf("advance to MinInt64 fired %q", got)
	}
}

func TestTimersKeyGroupOwnership(t *testing.T) {
	b := openBackend(t, testOptions(t, KeyGroupRange{Start: 32, End: 63}))
	s := newTimerService(t, b, "t")
	for _, g := range []int{31, 64, -1, 128} {
		key := k(g, "a")
		for name, err := range map[string]error{
			"RegisterEventTimeTimer":      s.RegisterEventTimeTimer(key, nil, 1),
			"DeleteEventTimeTimer":        s.DeleteEventTimeTimer(key, nil, 1),
			"RegisterProcessingTimeTimer": s.RegisterProcessingTimeTimer(key, nil, 1),
			"DeleteProcessingTimeTimer":   s.DeleteProcessingTimeTimer(key, nil, 1),
		} {
			if !errors.Is(err, ErrKeyGroup) {
				t.Fatalf("%s with key group %d: %v, want ErrKeyGroup", name, g, err)
			}
			if !strings.Contains(err.Error(), `"op/agg"`) || !strings.Contains(err.Error(), "[32, 63]") {
				t.Fatalf("%s: the error does not name the operator and the key groups: %v", name, err)
			}
		}
	}
	register(t, s, timer(1, k(32, "a"), ""))
	register(t, s, timer(1, k(63, "a"), ""))
	if got := advance(t, s, 1); len(got) != 2 {
		t.Fatalf("fired %q", got)
	}
}

func TestTimersProcessingTime(t *testing.T) {
	b := openBackend(t, testOptions(t, KeyGroupRange{Start: 0, End: 127}))
	s := newTimerService(t, b, "t")
	a := k(5, "a")
	register(t, s, timer(100, a, "e"))
	for _, ts := range []int64{300, 200, 200, 400} {
		if err := s.RegisterProcessingTimeTimer(a, []byte("p"), ts); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.DeleteProcessingTimeTimer(a, []byte("p"), 400); err != nil {
		t.Fatal(err)
	}
	if next, ok := s.NextProcessingTime(); !ok || next != 200 {
		t.Fatalf("NextProcessingTime %d %v", next, ok)
	}
	var fired []string
	if err := s.AdvanceProcessingTime(1000, func(tm Timer) error {
		fired = append(fired, timerString(tm))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"200|5|a|p", "300|5|a|p"}; !slices.Equal(fired, want) {
		t.Fatalf("processing time fired %q, want %q", fired, want)
	}
	// The queues are separate: the event-time timer is still there, and
	// processing time does not move the watermark.
	if s.CurrentWatermark() != math.MinInt64 {
		t.Fatalf("watermark %d", s.CurrentWatermark())
	}
	if got := advance(t, s, 100); !slices.Equal(got, []string{"100|5|a|e"}) {
		t.Fatalf("event time fired %q", got)
	}
}

func TestTimersErrors(t *testing.T) {
	b := openBackend(t, testOptions(t, KeyGroupRange{Start: 0, End: 127}))
	s := newTimerService(t, b, "t")
	if again := newTimerService(t, b, "t"); again != s {
		t.Fatal("registering a timer service again returned another instance")
	}
	if _, err := NewTimerService(b, ""); !errors.Is(err, ErrInvalidState) {
		t.Fatalf("empty name: %v", err)
	}
	if _, err := NewValue(b, "_timer_state/event_t", Int64Codec{}); !errors.Is(err, ErrStateConflict) {
		t.Fatalf("a value state named as the timers: %v", err)
	}
	if _, err := NewMap(b, "m", StringCodec{}, StringCodec{}); err != nil {
		t.Fatal(err)
	}
	if _, err := NewTimerService(b, "x"); err != nil {
		t.Fatal(err)
	}

	// A callback error stops the advance; its timer is gone, the next stays.
	register(t, s, timer(1, k(1, "a"), ""))
	register(t, s, timer(2, k(1, "a"), ""))
	boom := errors.New("boom")
	if err := s.AdvanceWatermark(5, func(Timer) error { return boom }); err != boom {
		t.Fatalf("callback error: %v", err)
	}
	if got := advance(t, s, 5); !slices.Equal(got, []string{"2|1|a|"}) {
		t.Fatalf("after the error fired %q", got)
	}

	// Advancing from a callback is refused.
	register(t, s, timer(6, k(1, "a"), ""))
	err := s.AdvanceWatermark(6, func(Timer) error { return s.AdvanceWatermark(7, func(Timer) error { return nil }) })
	if !errors.Is(err, ErrInvalidState) || !strings.Contains(err.Error(), "while timers are firing") {
		t.Fatalf("nested advance: %v", err)
	}
	if err := s.AdvanceWatermark(7, func(Timer) error { return nil }); err != nil {
		t.Fatalf("advance after a nested one was refused: %v", err)
	}

	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.RegisterEventTimeTimer(k(1, "a"), nil, 1); !errors.Is(err, ErrClosed) {
		t.Fatalf("register after Close: %v", err)
	}
	if err := s.AdvanceWatermark(8, func(Timer) error { return nil }); !errors.Is(err, ErrClosed) {
		t.Fatalf("advance after Close: %v", err)
	}
	if _, err := NewTimerService(b, "t"); !errors.Is(err, ErrClosed) {
		t.Fatalf("NewTimerService after Close: %v", err)
	}
}

// TestTimersNothingDue checks that an advance with nothing due reads no
// storage: it allocates nothing, which any Pebble read would.
func TestTimersNothingDue(t *testing.T) {
	b := openBackend(t, testOptions(t, KeyGroupRange{Start: 0, End: 127}))
	s := newTimerService(t, b, "t")
	for i := range 1000 {
		register(t, s, timer(int64(1000+i), testKey(i), ""))
	}
	fire := func(Timer) error { return errors.New("nothing is due") }
	wm := int64(0)
	allocs := testing.AllocsPerRun(100, func() {
		wm++
		if err := s.AdvanceWatermark(wm, fire); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("an advance with nothing due allocated %v times", allocs)
	}
}

func TestTimersLayout(t *testing.T) {
	b := openBackend(t, testOptions(t, KeyGroupRange{Start: 0, End: 127}))
	s := newTimerService(t, b, "t")
	v, err := NewValue(b, "v", Int64Codec{})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 500 {
		key := testKey(rng.IntN(100))
		register(t, s, timer(rng.Int64N(100)-50, key, fmt.Sprint(i%2)))
		if err := v.Put(key, int64(i)); err != nil {
			t.Fatal(err)
		}
	}
	lastGroup, lastTS := -1, int64(math.MinInt64)
	for _, rk := range timerKeys(t, b, s.event) {
		pk, err := parseKey(rk)
		if err != nil {
			t.Fatalf("a timer's key does not parse as a state entry: %v", err)
		}
		if string(pk.name) != "_timer_state/event_t" || len(pk.key) != 8 {
			t.Fatalf("timer key %q: name %q, key %x", rk, pk.name, pk.key)
		}
		ts := decodeTimestamp(pk.key)
		if pk.group < lastGroup || (pk.group == lastGroup && ts < lastTS) {
			t.Fatalf("timers are not ordered by key group, then timestamp: %d/%d after %d/%d", pk.group, ts, lastGroup, lastTS)
		}
		lastGroup, lastTS = pk.group, ts
	}
	metas, err := readMetas(b.db)
	if err != nil {
		t.Fatal(err)
	}
	if m := metas["_timer_state/event_t"]; m.kind != kindTimers || m.ttl.enabled {
		t.Fatalf("timer meta %+v", m)
	}
	if _, ok := metas["_timer_state/processing_t"]; !ok {
		t.Fatal("no meta entry for the processing-time timers")
	}
}

// fireAll advances s's watermark and processing time to the maximum and
// returns the fired timers.
func fireAll(t testing.TB, s *TimerService) (event, processing []string) {
	t.Helper()
	event = advance(t, s, math.MaxInt64)
	if err := s.AdvanceProcessingTime(math.MaxInt64, func(tm Timer) error {
		processing = append(processing, timerString(tm))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return event, processing
}

// inGroups returns the timers of m in key groups r.
func (m timerModel) inGroups(r KeyGroupRange) timerModel {
	out := timerModel{}
	for id, tm := range m {
		if r.Contains(tm.Key.Group) {
			out[id] = tm
		}
	}
	return out
}

// checkFiresExactly restores the snapshot handles into parallelism p and
// checks that every subtask fires exactly the timers of event and
// processing in its key groups, in order: together, every timer once, in
// its owning subtask.
func checkFiresExactly(t *testing.T, base string, hs []Handle, p int, event, processing timerModel) {
	t.Helper()
	total := 0
	for i := range p {
		opts := testOptions(t, SubtaskKeyGroups(128, p, i))
		opts.Subtask = i
		b := restoreBackend(t, opts, base, hs)
		s := newTimerService(t, b, "window-timers")
		gotE, gotP := fireAll(t, s)
		wantE := event.inGroups(b.KeyGroups()).due(math.MaxInt64)
		wantP := processing.inGroups(b.KeyGroups()).due(math.MaxInt64)
		if d := firstDifference(gotE, wantE); d >= 0 {
			t.Fatalf("parallelism %d subtask %d fired %d event-time timers, want %d; first difference at %d",
				p, i, len(gotE), len(wantE), d)
		}
		if d := firstDifference(gotP, wantP); d >= 0 {
			t.Fatalf("parallelism %d subtask %d fired %d processing-time timers, want %d; first difference at %d",
				p, i, len(gotP), len(wantP), d)
		}
		total += len(gotE)
		v, err := NewValue(b, "v", Int64Codec{})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok, err := v.Get(testKey(firstKeyIn(b.KeyGroups()))); err != nil || !ok {
			t.Fatalf("the value state did not travel with the timers: %v %v", ok, err)
		}
	}
	if total != len(event) {
		t.Fatalf("parallelism %d fired %d event-time timers in all, want %d", p, total, len(event))
	}
}

// firstKeyIn returns the first test key (of the first 400) in key groups r.
func firstKeyIn(r KeyGroupRange) int {
	for i := range 400 {
		if r.Contains(testKey(i).Group) {
			return i
		}
	}
	return -1
}

func TestTimersSnapshotRestore(t *testing.T) {
	st := initStorage(t)
	savepoint := t.TempDir()
	rng := rand.New(rand.NewPCG(5, 6))
	event, processing := timerModel{}, timerModel{}

	// Parallelism 2: timers and a value per key, some fired before the
	// snapshot, some registered and fired after it.
	var backends []*Backend
	var services []*TimerService
	for i := range 2 {
		opts := testOptions(t, SubtaskKeyGroups(128, 2, i))
		opts.Subtask = i
		b := openBackend(t, opts)
		s := newTimerService(t, b, "window-timers")
		setCacheLimit(s, 2)
		backends, services = append(backends, b), append(services, s)
	}
	owner := func(key Key) int {
		if backends[0].KeyGroups().Contains(key.Group) {
			return 0
		}
		return 1
	}
	for i := range 2000 {
		key := testKey(i % 400)
		o := owner(key)
		tm := timer(rng.Int64N(2000)-1000, key, fmt.Sprint("w", i%3))
		register(t, services[o], tm)
		event.add(tm)
		if i%5 == 0 {
			if err := services[o].RegisterProcessingTimeTimer(tm.Key, tm.Namespace, tm.Timestamp+5000); err != nil {
				t.Fatal(err)
			}
			processing.add(timer(tm.Timestamp+5000, tm.Key, string(tm.Namespace)))
		}
		v, err := NewValue(backends[o], "v", Int64Codec{})
		if err != nil {
			t.Fatal(err)
		}
		if err := v.Put(key, int64(i)); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range services {
		for _, f := range advance(t, s, -500) {
			delete(event, f)
		}
	}
	var checkpointHandles, savepointHandles []Handle
	for i, b := range backends {
		p, err := b.PrepareSnapshot(1)
		if err != nil {
			t.Fatal(err)
		}
		sp, err := b.PrepareSnapshot(2)
		if err != nil {
			t.Fatal(err)
		}
		// After the barrier: neither in the snapshot nor undone by it.
		register(t, services[i], timer(10_000, testKey(firstKeyIn(b.KeyGroups())), "after"))
		advance(t, services[i], 0)
		h, err := p.Persist(t.Context(), st)
		if err != nil {
			t.Fatal(err)
		}
		checkpointHandles = append(checkpointHandles, h)
		h, err = sp.PersistSelfContained(t.Context(), savepoint)
		if err != nil {
			t.Fatal(err)
		}
		savepointHandles = append(savepointHandles, h)
	}
	if len(event) < 1000 || len(processing) < 300 {
		t.Fatalf("the snapshot holds %d event-time and %d processing-time timers: too few to test", len(event), len(processing))
	}

	t.Run("same parallelism", func(t *testing.T) {
		checkFiresExactly(t, st.Root, checkpointHandles, 2, event, processing)
	})
	t.Run("savepoint", func(t *testing.T) {
		checkFiresExactly(t, savepoint, savepointHandles, 2, event, processing)
	})
	t.Run("2 to 3", func(t *testing.T) {
		checkFiresExactly(t, st.Root, checkpointHandles, 3, event, processing)
	})
	t.Run("2 to 1 to 3", func(t *testing.T) {
		checkFiresExactly(t, st.Root, checkpointHandles, 1, event, processing)
		// Restore into one subtask again, fire part of the timers, take a
		// checkpoint and restore it into three.
		b := restoreBackend(t, testOptions(t, KeyGroupRange{Start: 0, End: 127}), st.Root, checkpointHandles)
		s := newTimerService(t, b, "window-timers")
		left := maps.Clone(event)
		for _, f := range advance(t, s, 200) {
			delete(left, f)
		}
		h := checkpoint(t, b, st, 3)
		checkFiresExactly(t, st.Root, []Handle{h}, 3, left, processing)
	})
}

// TestTimersCorrupt checks that a timer entry that does not decode fails
// the advance that meets it, and every later call, with ErrCorrupt.
func TestTimersCorrupt(t *testing.T) {
	b := openBackend(t, testOptions(t, KeyGroupRange{Start: 0, End: 127}))
	s := newTimerService(t, b, "t")
	setCacheLimit(s, 2)
	for ts := range int64(5) {
		register(t, s, timer(ts, k(1, "a"), ""))
	}
	bad := append(s.event.keys.groupPrefix(1), timestampLen, 0xFF, 0xFF) // sorts after every timer
	if err := b.db.Set(bad, nil, pebble.NoSync); err != nil {
		t.Fatal(err)
	}
	var fired []string
	err := s.AdvanceWatermark(math.MaxInt64, func(tm Timer) error {
		fired = append(fired, timerString(tm))
		return nil
	})
	if !errors.Is(err, ErrCorrupt) || len(fired) == 0 {
		t.Fatalf("advance over a corrupt timer fired %q and returned %v, want ErrCorrupt", fired, err)
	}
	// The timers not fired are still stored: a failed load loses none.
	if n := len(timerKeys(t, b, s.event)); n != 5-len(fired)+1 {
		t.Fatalf("%d timers fired, %d entries left, want %d", len(fired), n, 5-len(fired)+1)
	}
	if err := s.RegisterEventTimeTimer(k(2, "b"), nil, 1); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("register after the corruption: %v", err)
	}
	if err := s.AdvanceWatermark(math.MaxInt64, func(Timer) error { return nil }); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("advance after the corruption: %v", err)
	}
	s.NextEventTime() // must not panic

	// A service created on the database meets it when loading the heads.
	delete(b.timerServices, "t")
	for ts := range int64(5) {
		if err := b.db.Delete(s.event.encode(k(1, "a"), nil, ts), pebble.NoSync); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := NewTimerService(b, "t"); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("NewTimerService over a corrupt timer: %v", err)
	}
}
