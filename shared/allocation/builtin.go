package allocation

import (
	"cmp"
	"math"
	"slices"

	"github.com/shardwise/shardwise/shared/cluster"
)

// countState is the per-node shard counts OpenSearch's balancer weighs, taken once for measuring
// many indices: the nodes in service sorted by count, and the mean count.
type countState struct {
	live   []*cluster.Node
	isLive map[string]bool
	avg    float64
}

func (v *View) counts() *countState {
	cs := &countState{isLive: make(map[string]bool, len(v.data))}
	// Sorted on counts read once: the planner weighs the balancer for each group it tries, and at
	// 750 nodes reading the counts' map inside the comparison was a fifth of planning.
	type counted struct {
		n     *cluster.Node
		count int
	}
	live := make([]counted, 0, len(v.data))
	total := 0
	for _, n := range v.data {
		if v.excluded[n.ID] {
			continue
		}
		c := v.NodeCopies(n.ID)
		live = append(live, counted{n, c})
		cs.isLive[n.ID] = true
		total += c
	}
	slices.SortStableFunc(live, func(a, b counted) int { return cmp.Compare(a.count, b.count) })
	cs.live = make([]*cluster.Node, len(live))
	for i := range live {
		cs.live[i] = live[i].n
	}
	if len(cs.live) > 0 {
		cs.avg = float64(total) / float64(len(cs.live))
	}
	return cs
}

// builtinDelta is OpenSearch's BalancedShardsAllocator view of one index: weight(node) =
// θshard·(copies on node − mean) + θindex·(copies of the index on node − mean), and the balancer
// relocates when max − min weight passes the threshold. It returns that spread. Nodes without a copy
// of the index differ only in their shard count, so only the extremes among them are weighed.
func (v *View) builtinDelta(cs *countState, index string) float64 {
	b := v.Cfg.BuiltinBalancer
	live := len(cs.live)
	if live < 2 {
		return 0
	}
	held := v.indexOn[index]
	idx := 0
	for node, share := range held {
		if cs.isLive[node] {
			idx += int(share.copies)
		}
	}
	avgIdx := float64(idx) / float64(live)
	lo, hi := math.Inf(1), math.Inf(-1)
	weigh := func(node string, k int) {
		w := b.Shard*(float64(v.NodeCopies(node))-cs.avg) + b.Index*(float64(k)-avgIdx)
		lo, hi = math.Min(lo, w), math.Max(hi, w)
	}
	for node, share := range held {
		if cs.isLive[node] && share.copies != 0 {
			weigh(node, int(share.copies))
		}
	}
	for _, n := range cs.live {
		if held[n.ID].copies == 0 {
			weigh(n.ID, 0)
			break
		}
	}
	for i := live - 1; i >= 0; i-- {
		if n := cs.live[i]; held[n.ID].copies == 0 {
			weigh(n.ID, 0)
			break
		}
	}
	return hi - lo
}

// builtinIndices are the indices whose balance a set of moves touches: those moved, and every index
// on the nodes involved (their shard-count term changes).
func (v *View) builtinIndices(moves []Move) (indices []string, own int) {
	seen := map[string]bool{}
	add := func(ix string) {
		if !seen[ix] {
			seen[ix] = true
			indices = append(indices, ix)
		}
	}
	// The moved indices first, in the moves' order: theirs is the spread a move changes most.
	for _, m := range moves {
		add(m.Index)
	}
	own = len(indices)
	for _, m := range moves {
		for _, node := range []string{m.From, m.To} {
			if st := v.node[node]; st != nil {
				for id := range st.holds {
					add(id.Index)
				}
			}
		}
	}
	return indices, own
}

// invitesBuiltin reports whether applying moves would push some index's builtin-balancer spread past
// the threshold (and past where it already was): OpenSearch would then move shards to undo them.
func (v *View) invitesBuiltin(moves []Move) (bool, string, float64) {
	b := v.Cfg.BuiltinBalancer
	if !b.Enabled {
		return false, "", 0
	}
	indices, own := v.builtinIndices(moves)
	// The spreads before the moves are those of the view's counts, the same for every group the
	// search weighs until a move is applied: worked out once (at 30,000 copies over 37 nodes a
	// group's nodes hold about 1,600 indices, and weighing them twice a group was most of planning).
	if v.builtin.counts == nil || v.builtin.at != v.counted || v.builtin.with != b {
		v.builtin.at, v.builtin.with, v.builtin.counts, v.builtin.deltas = v.counted, b, v.counts(), map[string]float64{}
	}
	before := make(map[string]float64, len(indices))
	for _, ix := range indices {
		d, ok := v.builtin.deltas[ix]
		if !ok {
			d = v.builtinDelta(v.builtin.counts, ix)
			v.builtin.deltas[ix] = d
		}
		before[ix] = d
	}
	// Only the counts matter to the builtin balancer: shift them, measure, roll them back (and
	// with them their number, and so what was worked out from it).
	cp := v.checkpoint()
	for _, m := range moves {
		id := cluster.ShardID{Index: m.Index, Shard: m.Shard}
		from, to := v.save(m.From, id), v.save(m.To, id)
		v.count(m.Index, from, to, false)
	}
	defer v.rollback(cp)
	cs := v.counts()
	// A moved index that spreads past the threshold is named first; past them, the other indices
	// come in map order, so the one named is the widest spread (then the first by name): the same
	// snapshot names the same index.
	worst, worstAfter := "", 0.0
	for i, ix := range indices {
		after := v.builtinDelta(cs, ix)
		if after > b.Threshold+1e-9 && after > before[ix]+1e-9 {
			if i < own {
				return true, ix, after
			}
			if worst == "" || after > worstAfter || after == worstAfter && ix < worst {
				worst, worstAfter = ix, after
			}
		}
	}
	if worst != "" {
		return true, worst, worstAfter
	}
	return false, "", 0
}
