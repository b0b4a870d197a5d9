package operators

import (
	"time"

	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/state"
)

// State TTL of the keyed aggregation, as Flink's table.exec.state.ttl for a
// group aggregation: a key whose last row came more than the TTL ago
// (processing time) is forgotten, and a row of it later starts a new
// result from nothing. It applies when the aggregation emits updates; with
// final emission every key is kept to the end, as Flink's batch mode
// ignores state TTL. The groups in memory carry their last touch; the
// backend's entries carry Pebble state TTL (package state), so a group
// forgotten in memory and expired there is not loaded back.

// aggStateTTL is the aggregation's TTL: its own, else the job's.
func aggStateTTL(spec *plan.KeyedAggregate, opts Options, updates bool) time.Duration {
	if !updates {
		return 0
	}
	if ms := spec.StateTTLMs; ms > 0 {
		return time.Duration(ms) * time.Millisecond
	}
	return opts.StateTTL
}

func (p *aggProc) ttlOptions() []state.StateOption {
	if p.ttl <= 0 {
		return nil
	}
	return []state.StateOption{state.WithTTL(state.TTL{Duration: p.ttl})}
}

// expireTouched starts the groups of a batch's rows afresh when their
// state expired, and records that they were touched now.
func (p *aggProc) expireTouched(gids []int) {
	now := p.keyed.now().UnixMilli()
	ttl := p.ttl.Milliseconds()
	for _, gid := range gids {
		g := p.list[gid]
		if g.touched == now {
			continue
		}
		if g.touched != 0 && now-g.touched >= ttl {
			// Forgotten, as Flink's state TTL: the key's next result is
			// an insert (+I), and what was emitted before is never
			// retracted.
			g.acc = make([]accumulator, len(p.aggs))
			g.rows, g.emitted, g.prev = 0, false, nil
		}
		g.touched = now
	}
}

// dropExpired removes the expired groups from the backend and reports
// whether there were any (the caller then forgets the groups in memory:
// the live ones are loaded back when their key comes).
func (p *aggProc) dropExpired() (bool, error) {
	if p.ttl <= 0 {
		return false, nil
	}
	now := p.keyed.now().UnixMilli()
	ttl := p.ttl.Milliseconds()
	expired := false
	for _, g := range p.list {
		if g.touched == 0 || now-g.touched < ttl {
			continue
		}
		expired = true
		g.dirty = false // never written again: that would renew it
		if err := p.keyed.values.Clear(g.stateKey); err != nil {
			return false, err
		}
	}
	return expired, nil
}
