package allocation

import "github.com/shardwise/shardwise/shared/cluster"

// DeciderIndexBalance names the index-balance decider.
const DeciderIndexBalance = "index_balance"

// indexBalance: a target already holding ceil(ceil(copies/eligible) × factor) copies of the index
// (per awareness zone, see View.IndexBalanceLimit) is NOT_PREFERRED, so an index's shards spread over as many nodes as they can (the Elasticsearch
// Serverless shard balancing blog's IndexBalanceDecider).
type indexBalance struct{}

func (indexBalance) Name() string { return DeciderIndexBalance }

func (indexBalance) CanAllocate(v *View, c *cluster.Copy, t *cluster.Node) Verdict {
	limit := v.IndexBalanceLimit(c.Index, t.ID)
	have := v.IndexCopies(c.Index, t.ID)
	if have >= limit {
		return verdict(DeciderIndexBalance, NotPreferred, float64(have), float64(limit),
			"%s already holds %d copies of %s, limit %d", t.Name, have, c.Index, limit)
	}
	return verdict(DeciderIndexBalance, Yes, float64(have), float64(limit), "%s holds %d copies of %s, under %d", t.Name, have, c.Index, limit)
}
