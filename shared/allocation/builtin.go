package allocation

import "math"

// builtinDelta is OpenSearch's BalancedShardsAllocator view of one index: weight(node) =
// θshard·(copies on node − mean) + θindex·(copies of the index on node − mean), and the balancer
// relocates when max − min weight passes the threshold. It returns that spread.
func (v *View) builtinDelta(index string) float64 {
	b := v.Cfg.BuiltinBalancer
	nodes := v.DataNodes()
	live := 0
	total, idx := 0, 0
	for _, n := range nodes {
		if v.excluded[n.ID] {
			continue
		}
		live++
		total += v.nodeCount[n.ID]
		idx += v.indexCount[index][n.ID]
	}
	if live < 2 {
		return 0
	}
	avgShards := float64(total) / float64(live)
	avgIdx := float64(idx) / float64(live)
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, n := range nodes {
		if v.excluded[n.ID] {
			continue
		}
		w := b.Shard*(float64(v.nodeCount[n.ID])-avgShards) + b.Index*(float64(v.indexCount[index][n.ID])-avgIdx)
		lo, hi = math.Min(lo, w), math.Max(hi, w)
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
	for _, ix := range indices {
		before[ix] = v.builtinDelta(ix)
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
	for _, ix := range indices {
		after := v.builtinDelta(ix)
		if after > b.Threshold+1e-9 && after > before[ix]+1e-9 {
			return true, ix, after
		}
	}
	return false, "", 0
}
