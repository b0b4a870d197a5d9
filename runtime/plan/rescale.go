package plan

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// FromRescale marks a parallelism a running job's rescale set
// (Options.Parallelism).
const FromRescale = "rescale"

// rescaleNode sets the parallelism Options.Parallelism asks for on the
// operators of one node, before its input edges are wired (keyed and limit
// inputs depend on it): by an operator's own uid, or by the node's uid,
// which sets every operator the node was split into (its UDF operators and
// the selects around them) so that they stay chained. A parallelism out of
// bounds, or one an operator cannot run at, is a problem.
func (b *builder) rescaleNode(info nodeInfo, ops []*Operator) {
	want := b.s.parallelism
	if len(want) == 0 {
		return
	}
	for _, op := range ops {
		uid := op.UID
		p, ok := want[uid]
		if !ok {
			uid = info.uid
			p, ok = want[uid]
		}
		if !ok {
			continue
		}
		b.rescaled[uid] = true
		switch {
		case p < 1 || p > ParallelismLimit:
			b.problem("the parallelism of uid %q is %d: it must be between 1 and %d (plan.ParallelismLimit)", uid, p, ParallelismLimit)
		case p != 1 && (op.ParallelismFrom == FromLimit || op.ParallelismFrom == FromWindowAll):
			b.problem("%s runs at parallelism 1 (%s), it cannot be rescaled to %d", opLabel(op), op.ParallelismFrom, p)
		default:
			op.Parallelism, op.ParallelismFrom = p, FromRescale
		}
	}
}

// checkRescaledUIDs reports the uids of Options.Parallelism that name no
// operator or node.
func (b *builder) checkRescaledUIDs() {
	for _, uid := range slices.Sorted(maps.Keys(b.s.parallelism)) {
		if !b.rescaled[uid] {
			b.problem("no operator or node has the uid %q: the job's uids are %s", uid, strings.Join(b.knownUIDs(), ", "))
		}
	}
}

// knownUIDs lists the uids Options.Parallelism accepts, nodes' and
// operators', sorted.
func (b *builder) knownUIDs() []string {
	seen := map[string]bool{}
	for _, op := range b.g.Operators {
		seen[op.UID] = true
		seen[b.nodes[op.NodeID].uid] = true
	}
	uids := slices.Sorted(maps.Keys(seen))
	for i, u := range uids {
		uids[i] = fmt.Sprintf("%q", u)
	}
	return uids
}
