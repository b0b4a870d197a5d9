package watermark

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// muxOp is one call on a multiplexer: on split (by index into the
// registered ids), immediate or deferred, or a periodic emit.
type muxOp struct {
	kind  string // "wm", "idle", "active", "defer-wm", "defer-idle", "periodic", "register", "unregister"
	split string
	wm    Watermark
	want  []string // what the call returns
}

// The vectors of Flink's WatermarkOutputMultiplexerTest. Flink's tests read
// the underlying output's last watermark and idleness; here every call's
// answer is checked, which says the same and more.
func TestMultiplexerFlinkVectors(t *testing.T) {
	reg := func(id string) muxOp { return muxOp{kind: "register", split: id} }
	for _, tc := range []struct {
		name string
		ops  []muxOp
	}{
		{"single immediate watermark", []muxOp{reg("a"), {kind: "wm", split: "a", wm: 0, want: []string{"W0"}}}},
		{"single immediate idleness", []muxOp{reg("a"), {kind: "idle", split: "a", want: []string{"IDLE"}}}},
		{"single immediate watermark after idleness", []muxOp{
			reg("a"), {kind: "idle", split: "a", want: []string{"IDLE"}},
			{kind: "wm", split: "a", wm: 0, want: []string{"ACTIVE", "W0"}},
		}},
		{"multiple immediate watermarks", []muxOp{
			reg("a"), reg("b"), reg("c"),
			{kind: "wm", split: "a", wm: 2}, {kind: "wm", split: "b", wm: 5},
			{kind: "idle", split: "c", want: []string{"W2"}},
		}},
		{"an output going idle advances the watermark", []muxOp{
			reg("a"), reg("b"),
			{kind: "wm", split: "a", wm: 2}, {kind: "wm", split: "b", wm: 5, want: []string{"W2"}},
			{kind: "idle", split: "a", want: []string{"W5"}},
		}},
		{"combined watermark does not regress when an idle output regresses", []muxOp{
			reg("a"), reg("b"),
			{kind: "wm", split: "a", wm: 2}, {kind: "wm", split: "b", wm: 5, want: []string{"W2"}},
			{kind: "idle", split: "a", want: []string{"W5"}},
			{kind: "wm", split: "a", wm: 3},
		}},
		{"no combined deferred update with zero outputs", []muxOp{{kind: "periodic"}}},
		{"deferred output does not immediately advance", []muxOp{
			reg("a"), reg("b"),
			{kind: "defer-wm", split: "a", wm: 0}, {kind: "defer-wm", split: "b", wm: 1},
			{kind: "periodic", want: []string{"W0"}},
		}},
		{"single deferred watermark", []muxOp{reg("a"), {kind: "defer-wm", split: "a", wm: 0}, {kind: "periodic", want: []string{"W0"}}}},
		{"single deferred idleness", []muxOp{reg("a"), {kind: "defer-idle", split: "a"}, {kind: "periodic", want: []string{"IDLE"}}}},
		{"single deferred watermark after idleness", []muxOp{
			reg("a"), {kind: "defer-idle", split: "a"}, {kind: "periodic", want: []string{"IDLE"}},
			{kind: "defer-wm", split: "a", wm: 0}, {kind: "periodic", want: []string{"ACTIVE", "W0"}},
		}},
		{"multiple deferred watermarks", []muxOp{
			reg("a"), reg("b"), reg("c"),
			{kind: "defer-wm", split: "a", wm: 2}, {kind: "defer-wm", split: "b", wm: 5}, {kind: "defer-idle", split: "c"},
			{kind: "periodic", want: []string{"W2"}},
		}},
		{"immediate updates take deferred updates into account", []muxOp{
			reg("imm"), reg("def"),
			{kind: "defer-wm", split: "def", wm: 5},
			{kind: "wm", split: "imm", wm: 2, want: []string{"W2"}},
		}},
		{"immediate update on the same output as a deferred one does not regress", []muxOp{
			reg("a"),
			{kind: "defer-wm", split: "a", wm: 5}, {kind: "periodic", want: []string{"W5"}},
			{kind: "wm", split: "a", wm: 2}, {kind: "periodic"},
		}},
		{"lower immediate update on the same output emits nothing", []muxOp{
			reg("a"), {kind: "defer-wm", split: "a", wm: 5}, {kind: "wm", split: "a", wm: 2},
		}},
		{"unregistering unblocks watermarks", []muxOp{
			reg("lower"), reg("higher"),
			{kind: "wm", split: "lower", wm: 156765},
			{kind: "unregister", split: "lower"},
			{kind: "wm", split: "higher", wm: 156775, want: []string{"W156775"}},
		}},
		{"unregistering the lowest does not immediately advance", []muxOp{
			reg("lower"), reg("higher"),
			{kind: "wm", split: "lower", wm: -4343}, {kind: "wm", split: "higher", wm: -4333, want: []string{"W-4343"}},
			{kind: "unregister", split: "lower"},
			{kind: "periodic", want: []string{"W-4333"}}, // the next update does
		}},
		{"unregistering the highest does not retract", []muxOp{
			reg("higher"), {kind: "wm", split: "higher", wm: 2, want: []string{"W2"}},
			{kind: "unregister", split: "higher"},
			reg("lower"), {kind: "wm", split: "lower", wm: 1},
		}},
		{"a split turning active again makes the output active at once", []muxOp{
			reg("a"), reg("b"),
			{kind: "wm", split: "a", wm: 4}, {kind: "wm", split: "b", wm: 6, want: []string{"W4"}},
			{kind: "idle", split: "a", want: []string{"W6"}}, {kind: "idle", split: "b", want: []string{"IDLE"}},
			{kind: "active", split: "a", want: []string{"ACTIVE"}}, // 4 < 6: no watermark, but active
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMultiplexer()
			for i, op := range tc.ops {
				var e Emission
				var err error
				switch op.kind {
				case "register":
					err = m.Register(op.split)
				case "unregister":
					if !m.Unregister(op.split) {
						err = fmt.Errorf("%q was not registered", op.split)
					}
				case "wm":
					e, err = m.Watermark(op.split, op.wm)
				case "idle":
					e, err = m.MarkIdle(op.split)
				case "active":
					e, err = m.MarkActive(op.split)
				case "defer-wm":
					err = m.DeferWatermark(op.split, op.wm)
				case "defer-idle":
					err = m.DeferIdle(op.split)
				case "periodic":
					e = m.OnPeriodicEmit()
				}
				if err != nil {
					t.Fatalf("op %d %+v: %v", i, op, err)
				}
				if got := events(e); !slices.Equal(got, op.want) {
					t.Fatalf("op %d %+v: sent %v, want %v", i, op, got, op.want)
				}
			}
		})
	}
}

func TestMultiplexerRegistration(t *testing.T) {
	m := NewMultiplexer()
	if err := m.Register("s"); err != nil {
		t.Fatal(err)
	}
	if err := m.Register("s"); err == nil {
		t.Fatal("registered twice")
	}
	if !m.Unregister("s") || m.Unregister("s") || m.Unregister("never") {
		t.Fatal("Unregister's answers are wrong")
	}
	if _, err := m.Watermark("s", 1); err == nil {
		t.Fatal("a watermark of an unregistered split was accepted")
	}
	if err := m.DeferIdle("s"); err == nil {
		t.Fatal("idleness of an unregistered split was accepted")
	}
}

// Per-split generators feeding a multiplexer, as a source subtask reading
// two files does: the slow file holds the watermark back until it goes
// idle; one fast file does not make the other's rows late.
func TestSplitGeneratorsThroughMultiplexer(t *testing.T) {
	clock := NewManualClock(time.Unix(0, 0))
	m := NewMultiplexer()
	gens := map[string]Generator{}
	for _, id := range []string{"fast", "slow"} {
		inner, _ := NewBoundedOutOfOrderness(0)
		g, err := NewWithIdleness(inner, time.Second, clock)
		if err != nil {
			t.Fatal(err)
		}
		gens[id] = g
		if err := m.Register(id); err != nil {
			t.Fatal(err)
		}
	}
	tick := func(want ...string) {
		t.Helper()
		clock.Advance(400 * time.Millisecond)
		for _, id := range []string{"fast", "slow"} {
			if err := m.Apply(id, gens[id].OnPeriodicEmit()); err != nil {
				t.Fatal(err)
			}
		}
		if got := events(m.OnPeriodicEmit()); !slices.Equal(got, want) {
			t.Fatalf("periodic emit sent %v, want %v", got, want)
		}
	}
	row := func(id string, ts int64) {
		if err := m.Apply(id, gens[id].OnEvent(ts)); err != nil {
			t.Fatal(err)
		}
	}
	row("fast", 1000)
	row("slow", 10)
	tick("W9")
	row("fast", 5000)
	tick() // t=800ms: slow holds the watermark at 9; its quiet countdown starts
	tick() // t=1200ms: 400ms quiet
	row("fast", 6000)
	tick()          // t=1600ms: 800ms quiet
	tick("W5999")   // t=2000ms: 1200ms > 1s quiet: slow is idle, fast alone counts
	row("slow", 20) // slow resumes: it is active again, behind; the combined watermark does not go back
	tick()
}
