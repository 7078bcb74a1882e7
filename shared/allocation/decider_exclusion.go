package allocation

import "github.com/shardwise/shardwise/shared/cluster"

// DeciderNodeExclusion names the node-exclusion decider.
const DeciderNodeExclusion = "node_exclusion"

// exclusion: nodes that are not data nodes, or are being drained or shut down, take nothing, and
// copies on a drained node may not remain.
type exclusion struct{}

func (exclusion) Name() string { return DeciderNodeExclusion }

func (exclusion) CanAllocate(v *View, _ *cluster.Copy, t *cluster.Node) Verdict {
	if !t.IsData() {
		return verdict(DeciderNodeExclusion, No, 0, 0, "%s has no data role", t.Name)
	}
	if v.excluded[t.ID] {
		return verdict(DeciderNodeExclusion, No, 0, 0, "%s is excluded (draining or shutting down)", t.Name)
	}
	return yes(DeciderNodeExclusion, "%s is a data node in service", t.Name)
}

func (exclusion) CanRemain(v *View, _ *cluster.Copy, n *cluster.Node) Verdict {
	if v.excluded[n.ID] {
		return verdict(DeciderNodeExclusion, No, 0, 0, "%s is excluded (draining or shutting down)", n.Name)
	}
	return yes(DeciderNodeExclusion, "%s is in service", n.Name)
}
