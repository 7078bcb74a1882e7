package sim

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
func (s *Sim) restartNode(n *node, down float64) {
	var held []*shardCopy
	for _, ix := range s.indices {
		for _, sh := range ix.shards {
			for _, c := range sh.copies {
				// An initializing copy has partial data, which OpenSearch does not reuse.
				if c.node == n && c.active() {
					held = append(held, c)
				}
			}
		}
	}
	s.nodeLeave(n)
	for _, c := range held {
		if c.state == stateUnassigned {
			c.dataOn = n
		}
	}
	n.restart = &restart{returnsAt: s.now().Add(time.Duration(down * float64(time.Second)))}
	n.restarts++
}

// returnRestartedNodes brings back the nodes whose restart is over, with a new ephemeral id as a
// restarted process has, and puts their copies back at once (OpenSearch reroutes on a node join).
func (s *Sim) returnRestartedNodes() []string {
	var back []string
	for _, n := range s.nodes {
		if n.restart == nil || s.now().Before(n.restart.returnsAt) {
			continue
		}
		n.present, n.restart, n.joined = true, nil, s.now()
		n.ephemeralID = makeID(s.sc.Seed, fmt.Sprintf("ephemeral/%s/%d", n.name, n.restarts))
		back = append(back, "node_restart "+n.name+" back")
		s.changed()
	}
	if len(back) > 0 {
		s.refresh()
		s.alloc.AllocateExistingData()
	}
	return back
}

// AllocateExistingData allocates each unassigned copy whose data is on a present node to that node
// when the deciders say YES, as OpenSearch's gateway allocator does before the balancer: a primary
// whose every copy was lost recovers from its own store, a replica whose node_left delay has not
// run out (or has, but it is still unassigned) recovers by replaying the operations it missed.
// Neither copies files, so the recovery ends at the next tick's recoveries; the replay is not
// timed. It returns how many it allocated.
func (s *Sim) AllocateExistingData() int {
	allocated := 0
	for _, ix := range s.indices {
		for _, sh := range ix.shards {
			for _, c := range sh.copies {
				to := c.dataOn
				if c.state != stateUnassigned || to == nil || !to.present {
					continue
				}
				if s.canAllocate(sh, c, to, false, false).typ != decYes {
					continue
				}
				s.initialize(c, to, false)
				c.rec.bytes = 0 // its files are there
				c.lostData = false
				allocated++
			}
		}
	}
	return allocated
}

// readyForNext reports whether an event that waits for green may happen: the cluster is green and
// no restarted node is still away.
func (s *Sim) readyForNext() bool {
	for _, n := range s.nodes {
		if n.restart != nil {
			return false
		}
	}
	health, _, _, _ := s.healthCounts()
	return health == "green"
}
