package allocation

import (
	"fmt"

	"github.com/shardwise/shardwise/shared/cluster"
)

// Explain returns every decider's answer for every node for one copy: the "why" behind any move.
// It judges on the view the planner plans on (PlannedView: the hot and rising nodes of hotspots
// marked, their copies' loads raised to the demand their backlog shows), so what it answers for a
// planned move is what the plan's verdicts say.
func Explain(snap *cluster.Snapshot, cfg Config, hotspots []Hotspot, index string, shard int, primary bool) ([]NodeExplanation, error) {
	v := PlannedView(snap, hotspots, cfg)
	snap = v.Snap
	var c *cluster.Copy
	for i := range snap.Copies {
		cp := &snap.Copies[i]
		if cp.Index == index && cp.Shard == shard && cp.Primary == primary && cp.Node != "" {
			c = cp
			break
		}
	}
	if c == nil {
		kind := "replica"
		if primary {
			kind = "primary"
		}
		return nil, fmt.Errorf("explain %s[%d]: no assigned %s copy", index, shard, kind)
	}
	out := make([]NodeExplanation, 0, len(snap.Nodes))
	for i := range snap.Nodes {
		n := &snap.Nodes[i]
		e := NodeExplanation{Node: n.ID, NodeName: n.Name, Current: n.ID == c.Node}
		if e.Current {
			e.Verdicts = EvaluateRemain(v, c, n)
		} else {
			e.Verdicts = Evaluate(v, c, n)
		}
		e.Verdicts = explained(e.Verdicts)
		e.Decision = Worst(e.Verdicts)
		out = append(out, e)
	}
	return out, nil
}

// NodeExplanation is every decider's verdict for one node.
type NodeExplanation struct {
	Node     string    `json:"node"`
	NodeName string    `json:"node_name"`
	Current  bool      `json:"current"`
	Decision Decision  `json:"decision"`
	Verdicts []Verdict `json:"verdicts"`
}
