package allocation

import "github.com/shardwise/shardwise/shared/cluster"

// DeciderShardsLimit names the shard-count-limit decider, as OpenSearch names its
// ShardsLimitAllocationDecider.
const DeciderShardsLimit = "shards_limit"

// shardsLimit: OpenSearch's ShardsLimitAllocationDecider, a hard NO. A node may hold at most
// cluster.routing.allocation.total_shards_per_node copies of all indices, at most
// index.routing.allocation.total_shards_per_node copies of the index, and (OpenSearch 3.0 and
// later) at most total_primary_shards_per_node primaries, cluster-wide and of the index; a target
// at a limit is refused. Counts are the view's: a copy relocating in counts on its target and not
// on its source (OpenSearch's numberOfOwningShards leaves RELOCATING sources out), and every move
// planned this cycle is counted where it lands. A copy over a limit where it is (the limit was
// lowered) is OpenSearch's own allocator's to move, so there is no can-remain.
type shardsLimit struct{}

func (shardsLimit) Name() string { return DeciderShardsLimit }

func (shardsLimit) CanAllocate(v *View, c *cluster.Copy, t *cluster.Node) Verdict {
	set := v.Snap.Settings
	var ixLimit, ixPrimLimit int
	if ix := v.Index(c.Index); ix != nil {
		ixLimit, ixPrimLimit = ix.TotalShardsPerNode, ix.TotalPrimaryShardsPerNode
	}
	if set.TotalShardsPerNode <= 0 && set.TotalPrimaryShardsPerNode <= 0 && ixLimit <= 0 && ixPrimLimit <= 0 {
		return yes(DeciderShardsLimit, "no total_shards_per_node or total_primary_shards_per_node limit is set")
	}
	have := v.NodeCopies(t.ID)
	if l := set.TotalShardsPerNode; l > 0 && have >= l {
		return verdict(DeciderShardsLimit, No, float64(have), float64(l),
			"%s holds %d copies, at cluster.routing.allocation.total_shards_per_node=%d", t.Name, have, l)
	}
	if l := set.TotalPrimaryShardsPerNode; l > 0 && c.Primary {
		if p := v.NodePrimaries(t.ID); p >= l {
			return verdict(DeciderShardsLimit, No, float64(p), float64(l),
				"%s holds %d primaries, at cluster.routing.allocation.total_primary_shards_per_node=%d", t.Name, p, l)
		}
	}
	if ixLimit > 0 {
		if n := v.IndexCopies(c.Index, t.ID); n >= ixLimit {
			return verdict(DeciderShardsLimit, No, float64(n), float64(ixLimit),
				"%s holds %d copies of %s, at index.routing.allocation.total_shards_per_node=%d", t.Name, n, c.Index, ixLimit)
		}
	}
	if ixPrimLimit > 0 && c.Primary {
		if p := v.IndexPrimaries(c.Index, t.ID); p >= ixPrimLimit {
			return verdict(DeciderShardsLimit, No, float64(p), float64(ixPrimLimit),
				"%s holds %d primaries of %s, at index.routing.allocation.total_primary_shards_per_node=%d", t.Name, p, c.Index, ixPrimLimit)
		}
	}
	if ixLimit > 0 {
		n := v.IndexCopies(c.Index, t.ID)
		return verdict(DeciderShardsLimit, Yes, float64(n), float64(ixLimit),
			"%s holds %d copies of %s, under index.routing.allocation.total_shards_per_node=%d", t.Name, n, c.Index, ixLimit)
	}
	return verdict(DeciderShardsLimit, Yes, float64(have), float64(set.TotalShardsPerNode),
		"%s holds %d copies, under the shard limits (cluster %d, index primaries %d, cluster primaries %d)",
		t.Name, have, set.TotalShardsPerNode, ixPrimLimit, set.TotalPrimaryShardsPerNode)
}
