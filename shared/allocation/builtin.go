package allocation

import (
	"math"
	"sort"

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
	total := 0
	for _, n := range v.data {
		if v.excluded[n.ID] {
			continue
		}
		cs.live = append(cs.live, n)
		cs.isLive[n.ID] = true
		total += v.nodeCount[n.ID]
	}
	sort.SliceStable(cs.live, func(i, j int) bool { return v.nodeCount[cs.live[i].ID] < v.nodeCount[cs.live[j].ID] })
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
	held := v.indexCount[index]
	idx := 0
	for node, k := range held {
		if cs.isLive[node] {
			idx += k
		}
	}
	avgIdx := float64(idx) / float64(live)
	lo, hi := math.Inf(1), math.Inf(-1)
	weigh := func(node string, k int) {
		w := b.Shard*(float64(v.nodeCount[node])-cs.avg) + b.Index*(float64(k)-avgIdx)
		lo, hi = math.Min(lo, w), math.Max(hi, w)
	}
	for node, k := range held {
		if cs.isLive[node] && k != 0 {
			weigh(node, k)
		}
	}
	for _, n := range cs.live {
		if held[n.ID] == 0 {
			weigh(n.ID, 0)
			break
		}
	}
	for i := live - 1; i >= 0; i-- {
		if n := cs.live[i]; held[n.ID] == 0 {
			weigh(n.ID, 0)
			break
		}
	}
	return hi - lo
}

// builtinIndices are the indices whose balance a set of moves touches: those moved, and every index
// on the nodes involved (their shard-count term changes).
func (v *View) builtinIndices(moves []Move) []string {
	seen := map[string]bool{}
	var out []string
	add := func(ix string) {
		if !seen[ix] {
			seen[ix] = true
			out = append(out, ix)
		}
	}
	for _, m := range moves {
		add(m.Index)
		for _, node := range []string{m.From, m.To} {
			for id := range v.onNode[node] {
				add(id.Index)
			}
		}
	}
	return out
}

// invitesBuiltin reports whether applying moves would push some index's builtin-balancer spread past
// the threshold (and past where it already was): OpenSearch would then move shards to undo them.
func (v *View) invitesBuiltin(moves []Move) (bool, string, float64) {
	b := v.Cfg.BuiltinBalancer
	if !b.Enabled {
		return false, "", 0
	}
	indices := v.builtinIndices(moves)
	before := make(map[string]float64, len(indices))
	cs := v.counts()
	for _, ix := range indices {
		before[ix] = v.builtinDelta(cs, ix)
	}
	// Only the counts matter to the builtin balancer: shift them, measure, shift them back.
	for _, m := range moves {
		v.count(m.Index, m.From, -1)
		v.count(m.Index, m.To, 1)
	}
	defer func() {
		for _, m := range moves {
			v.count(m.Index, m.To, -1)
			v.count(m.Index, m.From, 1)
		}
	}()
	cs = v.counts()
	for _, ix := range indices {
		after := v.builtinDelta(cs, ix)
		if after > b.Threshold+1e-9 && after > before[ix]+1e-9 {
			return true, ix, after
		}
	}
	return false, "", 0
}
