package allocation

import "github.com/shardwise/shardwise/shared/cluster"

// DeciderSameShard names the same-shard decider.
const DeciderSameShard = "same_shard"

// sameShard: no two copies of a shard on one node, nor on one host when
// cluster.routing.allocation.same_shard.host is set.
type sameShard struct{}

func (sameShard) Name() string { return DeciderSameShard }

func (sameShard) CanAllocate(v *View, c *cluster.Copy, t *cluster.Node) Verdict {
	if v.Holds(t.ID, c.ID()) {
		return verdict(DeciderSameShard, No, 0, 0, "%s already holds a copy of %s[%d]", t.Name, c.Index, c.Shard)
	}
	if v.Snap.Settings.SameShardHost && t.Host != "" {
		for _, n := range v.DataNodes() {
			if n.ID != t.ID && n.Host == t.Host && v.Holds(n.ID, c.ID()) {
				return verdict(DeciderSameShard, No, 0, 0, "host %s (node %s) already holds a copy of %s[%d]", t.Host, n.Name, c.Index, c.Shard)
			}
		}
	}
	return yes(DeciderSameShard, "no copy of %s[%d] on %s", c.Index, c.Shard, t.Name)
}
