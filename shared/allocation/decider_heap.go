package allocation

import "github.com/shardwise/shardwise/shared/cluster"

// DeciderHeap names the heap decider.
const DeciderHeap = "heap"

// heap: the target's estimated heap after receiving the copy must stay under the limit. NO, never
// NOT_PREFERRED: a node out of memory is worse than a slow one. A node already over the limit may not
// keep its copies.
type heap struct{}

func (heap) Name() string { return DeciderHeap }

func (heap) CanAllocate(v *View, c *cluster.Copy, t *cluster.Node) Verdict {
	if t.HeapMaxBytes <= 0 {
		return yes(DeciderHeap, "%s reports no heap size", t.Name)
	}
	per := v.heapPerCopy(c.Node)
	if per == 0 {
		per = v.heapPerCopy(t.ID)
	}
	ratio := (v.figures(t.ID).heapUsed + per) / float64(t.HeapMaxBytes)
	limit := v.Cfg.HeapLimit
	if ratio > limit {
		return verdict(DeciderHeap, No, ratio, limit, "%s heap would be %.0f%% after the move, over %.0f%%", t.Name, ratio*100, limit*100)
	}
	return verdict(DeciderHeap, Yes, ratio, limit, "%s heap would be %.0f%%, under %.0f%%", t.Name, ratio*100, limit*100)
}

func (heap) CanRemain(v *View, _ *cluster.Copy, n *cluster.Node) Verdict {
	if n.HeapMaxBytes <= 0 {
		return yes(DeciderHeap, "%s reports no heap size", n.Name)
	}
	ratio := v.figures(n.ID).heapUsed / float64(n.HeapMaxBytes)
	limit := v.Cfg.HeapLimit
	if ratio > limit {
		return verdict(DeciderHeap, No, ratio, limit, "%s heap is %.0f%%, over %.0f%%", n.Name, ratio*100, limit*100)
	}
	return verdict(DeciderHeap, Yes, ratio, limit, "%s heap is %.0f%%, under %.0f%%", n.Name, ratio*100, limit*100)
}
