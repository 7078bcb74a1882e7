package model

import (
	"fmt"
	"time"
)

// restart is a node_restart in progress: the node is away until returnsAt and then comes back with
// the same name, id and data.
type restart struct {
	returnsAt time.Time
}

// restartNode takes n away for down seconds, as a process restart does: it leaves the cluster
// (nodeLeave: a replica of each lost primary is promoted, lost replicas wait
// index.unassigned.node_left.delayed_timeout), but its copies' data stays on its disk. Each active
// copy it held remembers the node, so that when the node is back the allocator puts the copy there
// again without copying files (allocateExistingData), unless it was allocated elsewhere meanwhile.
func (s *Sim) restartNode(n *Node, down float64) {
	var held []*ShardCopy
	for _, ix := range s.Indices {
		for _, sh := range ix.Shards {
			for _, c := range sh.Copies {
				// An initializing copy has partial data, which OpenSearch does not reuse.
				if c.Node == n && c.Active() {
					held = append(held, c)
				}
			}
		}
	}
	s.nodeLeave(n)
	for _, c := range held {
		if c.State == StateUnassigned {
			c.DataOn = n
		}
	}
	n.restart = &restart{returnsAt: s.NowLocked().Add(time.Duration(down * float64(time.Second)))}
	n.restarts++
}

// returnRestartedNodes brings back the nodes whose restart is over, with a new ephemeral id as a
// restarted process has, and puts their copies back at once (OpenSearch reroutes on a node join).
func (s *Sim) returnRestartedNodes() []string {
	var back []string
	for _, n := range s.Nodes {
		if n.restart == nil || s.NowLocked().Before(n.restart.returnsAt) {
			continue
		}
		n.Present, n.restart, n.Joined = true, nil, s.NowLocked()
		s.TopologyChanged = n.Joined
		n.EphemeralID = MakeID(s.Spec.Seed, fmt.Sprintf("ephemeral/%s/%d", n.Name, n.restarts))
		back = append(back, "node_restart "+n.Name+" back")
		s.Changed()
	}
	if len(back) > 0 {
		s.Refresh()
		s.alloc.AllocateExistingData()
	}
	return back
}

// readyForNext reports whether an event that waits for green may happen: the cluster is green and
// no restarted node is still away.
func (s *Sim) readyForNext() bool {
	for _, n := range s.Nodes {
		if n.restart != nil {
			return false
		}
	}
	health, _, _, _ := s.HealthCounts()
	return health == "green"
}
