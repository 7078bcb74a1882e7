package allocation

import "github.com/shardwise/shardwise/shared/cluster"

// DeciderWriteLoad names the write-load decider. Its NOT_PREFERRED is a preference, not a wall: Admit
// may still take such a target when the move lowers the cluster's excess over the goal.
const DeciderWriteLoad = "write_load"

// writeLoad: a hot target, or one the shard's load would push past the allocation utilization, is
// NOT_PREFERRED (it could start queueing).
type writeLoad struct{}

func (writeLoad) Name() string { return DeciderWriteLoad }

func (writeLoad) CanAllocate(v *View, c *cluster.Copy, t *cluster.Node) Verdict {
	if v.hot[t.ID] {
		return verdict(DeciderWriteLoad, NotPreferred, v.Utilization(t.ID), v.Cfg.HotUtilization, "%s is a write hotspot", t.Name)
	}
	if t.Write.Threads <= 0 {
		return verdict(DeciderWriteLoad, NotPreferred, 0, 0, "%s reports no WRITE pool size", t.Name)
	}
	load := v.CopyLoad(c)
	after := (v.WriteLoad(t.ID) + load) / float64(t.Write.Threads)
	limit := v.Cfg.AllocationUtilization
	if after > limit {
		return verdict(DeciderWriteLoad, NotPreferred, after, limit,
			"%s WRITE utilization would be %.0f%% with %.2f threads more, over %.0f%%", t.Name, after*100, load, limit*100)
	}
	return verdict(DeciderWriteLoad, Yes, after, limit, "%s WRITE utilization would be %.0f%%, under %.0f%%", t.Name, after*100, limit*100)
}
