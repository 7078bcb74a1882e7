package allocation

import "github.com/shardwise/shardwise/shared/cluster"

// DeciderAwareness names the allocation-awareness decider.
const DeciderAwareness = "awareness"

// awareness: copies of a shard spread over the values of each awareness attribute; a value may hold
// at most ceil(copies / values) of them.
type awareness struct{}

func (awareness) Name() string { return DeciderAwareness }

func (awareness) CanAllocate(v *View, c *cluster.Copy, t *cluster.Node) Verdict {
	ix := v.Index(c.Index)
	if ix == nil || len(v.Snap.Settings.AwarenessAttributes) == 0 {
		return yes(DeciderAwareness, "no awareness attributes")
	}
	copies := 1 + ix.Replicas
	for _, attr := range v.Snap.Settings.AwarenessAttributes {
		tv, ok := t.Attributes[attr]
		if !ok {
			return verdict(DeciderAwareness, No, 0, 0, "%s has no awareness attribute %s", t.Name, attr)
		}
		values := map[string]bool{}
		for _, fv := range v.Snap.Settings.ForcedAwareness[attr] {
			values[fv] = true
		}
		inValue := 0
		for _, n := range v.DataNodes() {
			nv, ok := n.Attributes[attr]
			if !ok {
				continue
			}
			values[nv] = true
			if nv == tv && v.Holds(n.ID, c.ID()) && n.ID != c.Node {
				inValue++
			}
		}
		limit := (copies + len(values) - 1) / max(len(values), 1)
		if inValue+1 > limit {
			return verdict(DeciderAwareness, No, float64(inValue+1), float64(limit),
				"%s=%s would hold %d copies of %s[%d], over %d", attr, tv, inValue+1, c.Index, c.Shard, limit)
		}
	}
	return yes(DeciderAwareness, "copies stay spread over %v", v.Snap.Settings.AwarenessAttributes)
}
